variable "parent" {
  type = string
}

resource "terraform_data" "box" {
  input = var.parent
}

output "id" {
  value = terraform_data.box.id
}
