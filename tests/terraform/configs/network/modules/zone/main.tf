variable "name" {
  type = string
}

variable "vpc" {
  type = string
}

resource "terraform_data" "gateway" {
  input = "${var.vpc}/${var.name}"
}

output "id" {
  value = terraform_data.gateway.id
}
