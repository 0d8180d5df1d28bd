# The configuration graph of tests/terraform/test_configuration.py: a local module called
# twice (count and for_each), a resource with depends_on, and one that references both
# the VPC and its subnet.
variable "token" {
  type      = string
  default   = "not-a-real-secret"
  sensitive = true
}

resource "terraform_data" "vpc" {
  input = "10.0.0.0/16"
}

resource "terraform_data" "subnet" {
  input = { vpc_id = terraform_data.vpc.id, cidr = "10.0.1.0/24" }
}

resource "terraform_data" "instance" {
  input = {
    vpc_id    = terraform_data.vpc.id
    subnet_id = terraform_data.subnet.id
  }
  triggers_replace = var.token
}

resource "terraform_data" "audit" {
  input      = "audit"
  depends_on = [terraform_data.instance]
}

module "counted" {
  source = "./modules/box"
  count  = 2
  parent = terraform_data.vpc.id
}

module "each" {
  source   = "./modules/box"
  for_each = toset(["a", "b"])
  parent   = terraform_data.subnet.id
}

output "boxes" {
  value = [for m in module.counted : m.id]
}
