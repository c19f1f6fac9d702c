"""The package layout is the pipeline, and imports point one way: from the applications towards the core."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "granular"
#: Pipeline order; a module may import only from its own stage or an earlier one.
STAGES = ["errors", "frames", "frames3d", "foot", "io", "compiled", "data", "wrench", "learning", "dynamics", "contact", "simulation",
          "scenarios", "apps"]


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("granular"):
            names = [node.module] if node.module != "granular" else [f"granular.{a.name}" for a in node.names]
            yield from names
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("granular"))


def test_every_stage_is_a_folder_or_a_shared_module():
    found = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").exists()}
    assert found == set(STAGES)


def test_imports_point_towards_the_core():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        module = "granular." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        here = stage(module)
        if here in ("", "__init__", "__main__"):
            continue
        for target in imports(path):
            there = stage(target)
            if there in STAGES and STAGES.index(there) > STAGES.index(here):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_core_never_imports_the_cli_or_viewer():
    for path in PACKAGE.rglob("*.py"):
        if "apps" in path.parts or path.name == "__main__.py":
            continue
        assert not any(t.startswith("granular.apps") for t in imports(path)), path
