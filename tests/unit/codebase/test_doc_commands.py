"""The docs' shell commands, as tests/e2e/test_demo.py takes them from the Markdown: the
extraction itself (prompts, continuations, quotes, comments, other languages), and that
every `kubectl`/`deployplane` command of README.md and docs/install.md either runs on
`make demo` or says why it cannot (tests/support/doccommands.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.doccommands import DOCS, doc_commands, why_not_on_the_demo

ROOT = Path(__file__).resolve().parents[3]

SAMPLE = """# A page

```console
$ kubectl get agd -n demo
NAME   READY
bot    True
$ kubectl apply -n demo -f a.yaml \\
    -f b.yaml
```

```sh
# a comment line
kubectl -n demo get agd bot -o jsonpath='{range .x}
{end}'  # a quote over two lines
helm install x charts/deployplane
KUBECONFIG=x kubectl -n demo get agd
deployplane deployments list
```

```yaml
kubectl: not a command, a YAML key
```
"""


def test_commands_are_taken_from_every_shell_block_whatever_the_page(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / DOCS[0]).write_text(SAMPLE)
    (tmp_path / DOCS[1]).write_text("no blocks here\n")
    found = [(c.doc, c.line, c.text) for c in doc_commands(tmp_path)]
    assert found == [
        ("README.md", 4, "kubectl get agd -n demo"),
        ("README.md", 7, "kubectl apply -n demo -f a.yaml \\\n    -f b.yaml"),
        (
            "README.md",
            13,
            "kubectl -n demo get agd bot -o jsonpath='{range .x}\n{end}'  # a quote over two lines",
        ),
        ("README.md", 16, "KUBECONFIG=x kubectl -n demo get agd"),
        ("README.md", 17, "deployplane deployments list"),
    ]


def test_every_command_of_the_docs_runs_on_the_demo_or_says_why_not() -> None:
    commands = doc_commands(ROOT)
    assert {c.doc for c in commands} == set(DOCS)
    runs = [c for c in commands if why_not_on_the_demo(c) is None]
    assert runs, "no command of the docs runs on the demo"
    # On the demo the resources are in `demo`; `agents` holds their workloads only.
    resource = re.compile(r"\b(agentdeployments?|agd|listeners?|dpl)\b")
    wrong = [str(c) for c in runs if "-n agents" in c.text and resource.search(c.text)]
    assert wrong == [], "the demo's resources live in namespace demo"
