# A consumer of the plans producer's `root_id`, on this server.
variable "producer" {
  type = string
}

variable "username" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

data "terraform_remote_state" "producer" {
  backend = "http"
  config = {
    address  = var.producer
    username = var.username
    password = var.password
  }
}

resource "terraform_data" "user" {
  input = data.terraform_remote_state.producer.outputs.root_id
}
