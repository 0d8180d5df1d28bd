# net/core of tests/terraform/test_teams.py: a VPC, its id, and a secret only its
# consumers' named readers may read.
variable "peering_key" {
  type      = string
  sensitive = true
}

resource "terraform_data" "vpc" {
  input = { name = "vpc-core", peering_key = var.peering_key }
}

output "vpc_id" {
  value = terraform_data.vpc.id
}

output "peering_key" {
  value     = var.peering_key
  sensitive = true
}
