variable "environment" {
  type    = string
  default = "staging"
}

variable "zones" {
  type    = set(string)
  default = ["a", "b"]
}

resource "terraform_data" "vpc" {
  input = { name = "vpc-${var.environment}", cidr = "10.0.0.0/16" }
}

resource "terraform_data" "subnet" {
  count = 2
  input = { vpc = terraform_data.vpc.output.name, index = count.index }
}

module "zone" {
  source   = "./modules/zone"
  for_each = var.zones
  name     = each.key
  vpc      = terraform_data.vpc.output.name
}

resource "terraform_data" "route" {
  for_each = var.zones
  input    = module.zone[each.key].id
}

output "vpc_name" {
  value = terraform_data.vpc.output.name
}

output "gateways" {
  value = { for zone, m in module.zone : zone => m.id }
}
