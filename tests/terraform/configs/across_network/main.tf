# The producer of tests/terraform/test_across.py: a VPC-like resource and its outputs.
variable "environment" {
  type    = string
  default = "staging"
}

resource "terraform_data" "vpc" {
  input = "vpc-${var.environment}-main"
}

resource "terraform_data" "subnet" {
  count = 2
  input = { vpc = terraform_data.vpc.id, index = count.index }
}

output "vpc_id" {
  value = terraform_data.vpc.id
}

output "vpc_name" {
  value = terraform_data.vpc.output
}
