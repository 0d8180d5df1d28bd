variable "acl" {
  type    = string
  default = "private"
}

resource "terraform_data" "bucket" {
  input = { acl = var.acl, owner = "data" }
}

resource "terraform_data" "other" {
  input = { acl = "private", owner = "web" }
}

resource "terraform_data" "vault" {
  input = sensitive({ acl = "public-read", pin = "1234" })
}
