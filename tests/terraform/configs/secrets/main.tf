# A sensitive value in a resource's attributes and in an output, and a remote-state
# reader whose backend config holds a password (secret by convention only).
variable "db_password" {
  type      = string
  sensitive = true
}

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

resource "terraform_data" "db" {
  input = { engine = "postgres", password = var.db_password }
}

data "terraform_remote_state" "network" {
  backend = "http"
  config = {
    address  = var.address
    username = var.username
    password = var.password
  }
}

output "db_password" {
  value     = var.db_password
  sensitive = true
}

output "network_vpc" {
  value = data.terraform_remote_state.network.outputs.vpc_name
}
