# apps/web of tests/terraform/test_teams.py: a service on plat/cluster's cluster.
variable "name" {
  type    = string
  default = "web"
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

output "service" {
  value = terraform_data.service.output
}
