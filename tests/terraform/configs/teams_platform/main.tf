# plat/cluster of tests/terraform/test_teams.py: a cluster on net/core's VPC.
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

variable "cluster_token" {
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
  input = {
    vpc     = data.terraform_remote_state.network.outputs.vpc_id
    peering = data.terraform_remote_state.network.outputs.peering_key
    token   = var.cluster_token
  }
}

output "cluster_id" {
  value = terraform_data.cluster.id
}

output "cluster_token" {
  value     = var.cluster_token
  sensitive = true
}
