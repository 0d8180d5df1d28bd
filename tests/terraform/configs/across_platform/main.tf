# Reads the network's outputs through terraform_remote_state, on this server.
variable "network" {
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
    address  = var.network
    username = var.username
    password = var.password
  }
}

resource "terraform_data" "cluster" {
  input = "cluster-on-${data.terraform_remote_state.network.outputs.vpc_id}"
}

output "cluster_id" {
  value = terraform_data.cluster.id
}
