# Two independent resources: jobs that change one each run under disjoint leases. The
# backend block names no address: the http backend reads them from TF_HTTP_*, so that a
# lease's exports take the place of the state's at apply. A change of `a` (or `b`)
# replaces it, and its provisioner then waits for the file `gate_a` (`gate_b`): the
# tests decide when each apply ends, so both are seen holding their leases at once.
terraform {
  backend "http" {}
}

variable "a" {
  type    = string
  default = "a0"
}

variable "b" {
  type    = string
  default = "b0"
}

variable "gate_a" {
  type    = string
  default = ""
}

variable "gate_b" {
  type    = string
  default = ""
}

resource "terraform_data" "a" {
  input            = var.a
  triggers_replace = [var.a]

  provisioner "local-exec" {
    command = "[ -z '${var.gate_a}' ] || while [ ! -e '${var.gate_a}' ]; do sleep 0.1; done"
  }
}

resource "terraform_data" "b" {
  input            = var.b
  triggers_replace = [var.b]

  provisioner "local-exec" {
    command = "[ -z '${var.gate_b}' ] || while [ ! -e '${var.gate_b}' ]; do sleep 0.1; done"
  }
}

output "a" {
  value = terraform_data.a.output
}
