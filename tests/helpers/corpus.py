"""Real Terraform v4 state files for round-trip conformance (see tests/corpus/tfstate's
README)."""

from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "tfstate"


def corpus_files() -> list[Path]:
    files = sorted(CORPUS.glob("*.tfstate"))
    assert files, f"the state corpus is missing: no *.tfstate in {CORPUS}"
    return files
