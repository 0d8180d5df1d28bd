# Reads the outputs of many states on this server through terraform_remote_state;
# its own state stays local.
variable "addresses" {
  type = map(string)
}

variable "username" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

data "terraform_remote_state" "s" {
  for_each = var.addresses
  backend  = "http"
  config = {
    address  = each.value
    username = var.username
    password = var.password
  }
}

output "all" {
  value = { for key, state in data.terraform_remote_state.s : key => state.outputs }
}
