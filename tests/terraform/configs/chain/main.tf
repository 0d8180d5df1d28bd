# A chain a <- b <- c: Terraform writes c's dependencies closed (c: [a, b]).
resource "terraform_data" "a" {
  input = "a"
}

resource "terraform_data" "b" {
  input = terraform_data.a.output
}

resource "terraform_data" "c" {
  input = terraform_data.b.output
}
