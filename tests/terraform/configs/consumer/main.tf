# Reads another state's outputs through the same HTTP backend; keeps its own state locally.
variable "address" {
  type = string
}

variable "username" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

data "terraform_remote_state" "network" {
  backend = "http"
  config = {
    address  = var.address
    username = var.username
    password = var.password
  }
}

output "vpc_name" {
  value = data.terraform_remote_state.network.outputs.vpc_name
}

output "gateway_zones" {
  value = sort(keys(data.terraform_remote_state.network.outputs.gateways))
}
