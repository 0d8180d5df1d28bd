# An app: reads the platform's cluster and the network's name, on this server.
variable "name" {
  type = string
}

variable "network" {
  type = string
}

variable "platform" {
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

data "terraform_remote_state" "platform" {
  backend = "http"
  config = {
    address  = var.platform
    username = var.username
    password = var.password
  }
}

resource "terraform_data" "service" {
  input = "${var.name}-on-${data.terraform_remote_state.platform.outputs.cluster_id}"
}

resource "terraform_data" "dns" {
  input = "${var.name}.${data.terraform_remote_state.network.outputs.vpc_name}"
}
