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


#: Modules allowed past LONGEST lines (path under granular/); a module leaves the list when it is split.
LONG = {"data/dem.py", "simulation/fused.py", "compiled.py"}
LONGEST = 500


def test_modules_are_short():
    lines = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    long = {name for name, n in lines.items() if n > LONGEST}
    assert long <= LONG, f"past {LONGEST} lines: {', '.join(f'{m} ({lines[m]})' for m in sorted(long - LONG))}"
    assert LONG <= long, f"no longer past {LONGEST} lines, off the list: {', '.join(sorted(LONG - long))}"
    assert lines["apps/cli.py"] < 150, "the CLI is a table of contents: a command's code lives in apps/commands/"


def module_imports(path: Path):
    """The granular modules a file imports, at the top or in a function: ``from granular.x import y``
    names granular.x, and granular.x.y where y is a module."""
    yield from imports(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("granular."):
            for alias in node.names:
                folder = PACKAGE.joinpath(*node.module.split(".")[1:])
                if (folder / f"{alias.name}.py").exists() or (folder / alias.name / "__init__.py").exists():
                    yield f"{node.module}.{alias.name}"


def test_no_modules_import_each_other_in_a_circle():
    """Not even inside a function: a lazy import that closes a circle is a circle all the same."""
    def name(p):
        return ".".join(("granular",) + p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")

    modules = {name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {m: {t for t in module_imports(p) if t in modules and t != m} for m, p in modules.items()}
    circles, done = [], set()

    def visit(module, trail):
        if module in trail:
            circles.append(" → ".join(trail[trail.index(module):] + [module]))
            return
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, trail + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert not circles, "\n".join(circles)
