# The producer of tests/terraform/test_plans.py: root <- mid <- leaf, each replaced with
# the one before (triggers_replace); a new `generation` replaces the root.
variable "generation" {
  type    = string
  default = "one"
}

resource "terraform_data" "root" {
  input            = "root-${var.generation}"
  triggers_replace = var.generation
}

resource "terraform_data" "mid" {
  triggers_replace = terraform_data.root.id
}

resource "terraform_data" "leaf" {
  triggers_replace = terraform_data.mid.id
}

output "root_id" {
  value = terraform_data.root.id
}
