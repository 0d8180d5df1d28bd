# An apply that holds the state lock until the file `gate` exists: the tests
# decide when it ends, so lock contention is shown without guessing at timings.
variable "gate" {
  type = string
}

resource "terraform_data" "hold" {
  triggers_replace = [var.gate]

  provisioner "local-exec" {
    command = "while [ ! -e '${var.gate}' ]; do sleep 0.1; done"
  }
}
