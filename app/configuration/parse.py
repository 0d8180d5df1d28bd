"""Reading the `configuration` section of a Terraform plan's JSON (`terraform show -json
tfplan`): pure, no I/O.

Terraform exports the configuration already parsed: every module call (source, version
constraint, nested calls), every resource with the expressions of its arguments and
the addresses each one references, its `depends_on`, and the provider configurations.
From it come the module calls (keyed by their path without instance keys,
`module.net.module.subnets`) and the references between resources, resolved through
module variables and outputs to the resources they carry: a resource's argument that
reads `var.parent` of a module references whatever the call's `parent` argument
references in the module above.

What is kept holds names and references only, never a value (a variable's default, a
provider's argument, a constant): a sensitive value cannot be stored by accident.
A section that is not one (unknown keys, wrong types), nests modules deeper than
MAX_DEPTH, holds more than MAX_REFERENCES references or resolves a module's variable
or output through itself is refused with the reason (BadInput).
"""

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from app.errors import BadInput

MAX_DEPTH = 32  # module calls within module calls; and blocks within blocks
MAX_REFERENCES = 50_000  # reference strings in the whole section
MAX_ITEMS = 100_000  # module calls, resources, variables, outputs, providers: in all
MAX_NAME = 1024  # characters of a name, address or source

EXPLICIT = "explicit"  # depends_on
IMPLICIT = "implicit"  # an expression's reference

_CONFIGURATION_KEYS = {"provider_config", "root_module"}
_MODULE_KEYS = {"outputs", "resources", "module_calls", "variables", "actions"}
_RESOURCE_KEYS = {
    "address",
    "mode",
    "type",
    "name",
    "provider_config_key",
    "provisioners",
    "expressions",
    "schema_version",
    "count_expression",
    "for_each_expression",
    "depends_on",
    "identity_schema_version",
}
_CALL_KEYS = {
    "source",
    "expressions",
    "count_expression",
    "for_each_expression",
    "module",
    "version_constraint",
    "depends_on",
}
_VARIABLE_KEYS = {"default", "description", "sensitive", "nullable", "ephemeral", "deprecated"}
_OUTPUT_KEYS = {"expression", "sensitive", "depends_on", "description", "ephemeral", "deprecated"}
_PROVIDER_KEYS = {
    "name",
    "full_name",
    "alias",
    "module_address",
    "version_constraint",
    "expressions",
}
_EXPRESSION_KEYS = {"constant_value", "references"}
_MODES = {"managed", "data", "ephemeral"}
# The first step of a reference that names no resource, variable or module output.
_NOT_RESOURCES = {"local", "count", "each", "path", "terraform", "self", "ephemeral"}
_INDEX = re.compile(r'\[("([^"\\]|\\.)*"|[^\]]*)\]')


@dataclass(frozen=True)
class ModuleCall:
    key: str  # "module.net.module.subnets": the path without instance keys
    name: str
    parent: str  # the calling module's key, "" for the root module
    source: str
    version_constraint: str | None
    expansion: str | None  # "count", "for_each" or None


@dataclass(frozen=True)
class ConfigResource:
    address: str  # "module.net.aws_subnet.a": without instance keys
    module: str  # its module's key, "" for the root module
    mode: str
    type: str
    name: str
    provider: str | None  # its provider configuration's key
    expansion: str | None


@dataclass(frozen=True)
class Reference:
    """`source` depends on `target` (both ConfigResource addresses): through depends_on
    (EXPLICIT) or through the arguments in `attributes` (IMPLICIT; "count",
    "for_each", or a dotted argument path such as "ingress.cidr_blocks")."""

    source: str
    target: str
    reason: str
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variable:
    module: str
    name: str
    sensitive: bool


@dataclass(frozen=True)
class ProviderConfig:
    key: str
    name: str
    full_name: str | None
    alias: str | None
    module: str
    version_constraint: str | None
    references: dict[str, tuple[str, ...]]  # argument -> what its expression references


@dataclass(frozen=True)
class Configuration:
    modules: tuple[ModuleCall, ...]
    resources: tuple[ConfigResource, ...]
    references: tuple[Reference, ...]
    variables: tuple[Variable, ...]
    providers: tuple[ProviderConfig, ...]
    terraform_version: str | None = None
    hash: str = field(default="", compare=False)

    def document(self) -> dict[str, Any]:
        """What is stored of it (names and references, no value), as JSON."""
        return {
            "modules": [asdict(m) for m in self.modules],
            "resources": [asdict(r) for r in self.resources],
            "references": [asdict(r) for r in self.references],
            "variables": [asdict(v) for v in self.variables],
            "providers": [asdict(p) for p in self.providers],
        }


def config_address(address: str) -> str:
    """An instance's or module instance's address without its instance keys:
    `module.a["x"].aws_b.c[0]` -> `module.a.aws_b.c`."""
    return _INDEX.sub("", address)


def _fail(where: str, why: str) -> BadInput:
    return BadInput(f"not a Terraform configuration section: {where}: {why}")


def _object(value: Any, where: str, keys: set[str] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    if keys is not None:
        unknown = sorted(set(value) - keys)
        if unknown:
            raise _fail(where, f"unknown key {unknown[0]!r}")
    return value


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(where, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_NAME:
        raise _fail(where, f"longer than {MAX_NAME} characters")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {type(value).__name__}")
    return [str(_text(v, f"{where}[{i}]")) for i, v in enumerate(value)]


def _steps(reference: str) -> list[str]:
    """A reference's steps, instance keys dropped: `module.a[0].out` -> [module, a, out]."""
    return [s for s in config_address(reference).split(".") if s]


class _Reader:
    """One section read: its modules' raw objects by key, counted against the limits."""

    def __init__(self) -> None:
        self.references = 0
        self.items = 0
        self.modules: dict[str, dict[str, Any]] = {}  # key -> module object
        self.calls: dict[str, dict[str, Any]] = {}  # key -> call object
        self.resources: dict[str, ConfigResource] = {}
        self.raw_resources: dict[str, dict[str, Any]] = {}

    def count(self, where: str, references: int = 0) -> None:
        self.items += 1
        self.references += references
        if self.items > MAX_ITEMS:
            raise _fail(where, f"more than {MAX_ITEMS} items")
        if self.references > MAX_REFERENCES:
            raise _fail(where, f"more than {MAX_REFERENCES} references")

    def expression_refs(self, value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, str]]:
        """(argument path, reference) of an expression map's expressions, nested blocks
        included (their arguments' paths dotted)."""
        if depth > MAX_DEPTH:
            raise _fail(where, f"blocks nested deeper than {MAX_DEPTH}")
        for name, expression in _object(value, where).items():
            here = f"{where}.{name}"
            for path, reference in self.refs_in(expression, here, depth):
                yield (name if not path else f"{name}.{path}"), reference

    def refs_in(self, expression: Any, where: str, depth: int) -> Iterator[tuple[str, str]]:
        if isinstance(expression, list):  # a nested block's instances
            for i, block in enumerate(expression):
                yield from self.expression_refs(block, f"{where}[{i}]", depth + 1)
            return
        found = _object(expression, where)
        if set(found) <= _EXPRESSION_KEYS:
            references = _strings(found.get("references"), f"{where}.references")
            self.count(where, len(references))
            for reference in references:
                yield "", reference
            return
        # a single nested block: its own arguments
        yield from self.expression_refs(found, where, depth + 1)

    def refs_of(self, expression: Any, where: str) -> list[str]:
        if expression is None:
            return []
        found = _object(expression, where, _EXPRESSION_KEYS)
        references = _strings(found.get("references"), f"{where}.references")
        self.count(where, len(references))
        return references

    def module(self, value: Any, key: str, where: str, depth: int) -> list[ModuleCall]:
        if depth > MAX_DEPTH:
            raise _fail(where, f"module calls nested deeper than {MAX_DEPTH}")
        found = _object(value, where, _MODULE_KEYS)
        self.modules[key] = found
        prefix = f"{key}." if key else ""
        resources = found.get("resources") or []
        if not isinstance(resources, list):
            raise _fail(f"{where}.resources", "expected a list")
        for i, item in enumerate(resources):
            here = f"{where}.resources[{i}]"
            raw = _object(item, here, _RESOURCE_KEYS)
            self.count(here)
            mode = _text(raw.get("mode"), f"{here}.mode")
            if mode not in _MODES:
                raise _fail(f"{here}.mode", f"unknown mode {mode!r}")
            rtype = str(_text(raw.get("type"), f"{here}.type"))
            name = str(_text(raw.get("name"), f"{here}.name"))
            local = f"{rtype}.{name}" if mode == "managed" else f"{mode}.{rtype}.{name}"
            address = prefix + local
            if address in self.resources:
                raise _fail(here, f"resource {address!r} twice")
            self.resources[address] = ConfigResource(
                address=address,
                module=key,
                mode=str(mode),
                type=rtype,
                name=name,
                provider=_text(raw.get("provider_config_key"), f"{here}.provider", optional=True),
                expansion=_expansion(raw),
            )
            self.raw_resources[address] = raw
        for name, variable in _object(found.get("variables") or {}, f"{where}.variables").items():
            _object(
                variable, f"{where}.variables.{_text(name, f'{where}.variables')}", _VARIABLE_KEYS
            )
            self.count(where)
        for name, output in _object(found.get("outputs") or {}, f"{where}.outputs").items():
            _object(output, f"{where}.outputs.{name}", _OUTPUT_KEYS)
            self.count(where)
        calls: list[ModuleCall] = []
        for name, call in _object(found.get("module_calls") or {}, f"{where}.module_calls").items():
            here = f"{where}.module_calls.{_text(name, f'{where}.module_calls')}"
            raw = _object(call, here, _CALL_KEYS)
            self.count(here)
            child = f"{prefix}module.{name}"
            self.calls[child] = raw
            calls.append(
                ModuleCall(
                    key=child,
                    name=name,
                    parent=key,
                    source=str(_text(raw.get("source"), f"{here}.source")),
                    version_constraint=_text(
                        raw.get("version_constraint"), f"{here}.version_constraint", optional=True
                    ),
                    expansion=_expansion(raw),
                )
            )
            calls.extend(self.module(raw.get("module") or {}, child, f"{here}.module", depth + 1))
        return calls


def _expansion(raw: dict[str, Any]) -> str | None:
    if raw.get("count_expression") is not None:
        return "count"
    if raw.get("for_each_expression") is not None:
        return "for_each"
    return None


class _Resolver:
    """References to the resources they reach: a module's variable reaches what its
    call's argument references above, a module's output what its expression references
    within; each resolved once (memoized), a cycle refused."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.done: dict[tuple[str, str, str], frozenset[str]] = {}
        self.walking: list[tuple[str, str, str]] = []

    def resolve(self, module: str, references: list[str]) -> set[str]:
        """The resources `references` (read within `module`) reach."""
        steps = [_steps(r) for r in references]
        # Terraform lists a traversal's prefixes too (`aws_a.b.id`, `aws_a.b`); a module
        # named alone stands for all its outputs only when none of them is named.
        named = {tuple(s[:2]) for s in steps if len(s) > 2 and s[0] == "module"}
        found: set[str] = set()
        for s in steps:
            if s and s[0] == "module" and len(s) == 2 and tuple(s) in named:
                continue
            found |= self._step(module, s)
        return found

    def _step(self, module: str, steps: list[str]) -> set[str]:
        prefix = f"{module}." if module else ""
        if not steps or steps[0] in _NOT_RESOURCES:
            return set()
        head = steps[0]
        if head == "var" and len(steps) > 1:
            return set(self._memo(module, "var", steps[1]))
        if head == "module" and len(steps) > 1:
            child = f"{prefix}module.{steps[1]}"
            outputs = self.reader.modules.get(child, {}).get("outputs") or {}
            names = [steps[2]] if len(steps) > 2 else sorted(outputs)
            return {r for name in names for r in self._memo(child, "output", name)}
        if head in ("data", "ephemeral") and len(steps) > 2:
            address = f"{prefix}{head}.{steps[1]}.{steps[2]}"
        elif len(steps) > 1:
            address = f"{prefix}{steps[0]}.{steps[1]}"
        else:
            return set()
        return {address} if address in self.reader.resources else set()

    def _memo(self, module: str, kind: str, name: str) -> frozenset[str]:
        key = (module, kind, name)
        if key in self.done:
            return self.done[key]
        if key in self.walking:
            loop = [*self.walking[self.walking.index(key) :], key]
            shown = " -> ".join(f"{m or '(root)'} {k}.{n}" for m, k, n in loop)
            raise _fail("module_calls", f"a cycle through module variables and outputs: {shown}")
        self.walking.append(key)
        try:
            found = frozenset(self._compute(module, kind, name))
        finally:
            self.walking.pop()
        self.done[key] = found
        return found

    def _compute(self, module: str, kind: str, name: str) -> set[str]:
        if kind == "var":
            call = self.reader.calls.get(module)
            if call is None:  # a root module variable: set from outside
                return set()
            parent = module.rpartition(".module.")[0] if ".module." in module else ""
            expressions = _object(call.get("expressions") or {}, f"{module}.expressions")
            expression = expressions.get(name)
            if expression is None:
                return set()
            refs = [r for _, r in self.reader.refs_in(expression, f"{module}.{name}", 0)]
            return self.resolve(parent, refs)
        output = (self.reader.modules.get(module, {}).get("outputs") or {}).get(name)
        if output is None:
            return set()
        where = f"{module}.outputs.{name}"
        refs = self.reader.refs_of(output.get("expression"), f"{where}.expression")
        found = self.resolve(module, refs)
        found |= self.resolve(module, _strings(output.get("depends_on"), f"{where}.depends_on"))
        return found

    def under(self, module: str) -> set[str]:
        """Every resource within `module` and the modules it calls."""
        prefix = f"{module}."
        return {a for a in self.reader.resources if a.startswith(prefix)}


def parse_configuration(section: Any, terraform_version: Any = None) -> Configuration:
    """A plan's `configuration` section, read (see the module's docstring)."""
    reader = _Reader()
    found = _object(section, "configuration", _CONFIGURATION_KEYS)
    if "root_module" not in found:
        raise _fail("configuration", "no root_module")
    modules = reader.module(found["root_module"], "", "root_module", 0)
    resolver = _Resolver(reader)
    edges: dict[tuple[str, str, str], set[str]] = {}

    def add(source: str, targets: set[str], reason: str, attribute: str | None) -> None:
        for target in targets:
            if target != source:
                attributes = edges.setdefault((source, target, reason), set())
                if attribute:
                    attributes.add(attribute)

    for address, raw in reader.raw_resources.items():
        module = reader.resources[address].module
        where = f"resource {address}"
        by_argument: dict[str, list[str]] = {}
        expressions = raw.get("expressions") or {}
        for path, reference in reader.expression_refs(expressions, f"{where}.expressions"):
            by_argument.setdefault(path, []).append(reference)
        for argument in ("count", "for_each"):
            refs = reader.refs_of(raw.get(f"{argument}_expression"), f"{where}.{argument}")
            if refs:
                by_argument.setdefault(argument, []).extend(refs)
        for argument, refs in by_argument.items():
            add(address, resolver.resolve(module, refs), IMPLICIT, argument)
        explicit = _strings(raw.get("depends_on"), f"{where}.depends_on")
        add(address, _explicit(resolver, module, explicit), EXPLICIT, None)
        # what the calls above it depend on, it depends on (Terraform's module depends_on)
        key = module
        while key:
            call = reader.calls[key]
            parent = key.rpartition(".module.")[0] if ".module." in key else ""
            depends = _strings(call.get("depends_on"), f"{key}.depends_on")
            add(address, _explicit(resolver, parent, depends), EXPLICIT, None)
            for argument in ("count", "for_each"):
                refs = reader.refs_of(call.get(f"{argument}_expression"), f"{key}.{argument}")
                add(address, resolver.resolve(parent, refs), IMPLICIT, f"{key}.{argument}")
            key = parent
    references = tuple(
        Reference(source, target, reason, tuple(sorted(attributes)))
        for (source, target, reason), attributes in sorted(edges.items())
    )
    variables = tuple(
        Variable(key, name, bool(v.get("sensitive")))
        for key, module in sorted(reader.modules.items())
        for name, v in sorted((module.get("variables") or {}).items())
    )
    providers = _providers(reader, found.get("provider_config") or {})
    configuration = Configuration(
        modules=tuple(sorted(modules, key=lambda m: m.key)),
        resources=tuple(sorted(reader.resources.values(), key=lambda r: r.address)),
        references=references,
        variables=variables,
        providers=providers,
        terraform_version=terraform_version if isinstance(terraform_version, str) else None,
    )
    canonical = json.dumps(configuration.document(), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Configuration(**{**configuration.__dict__, "hash": digest})


def _explicit(resolver: _Resolver, module: str, depends_on: list[str]) -> set[str]:
    """depends_on entries: a resource, or a module call (everything within it)."""
    prefix = f"{module}." if module else ""
    found: set[str] = set()
    for entry in depends_on:
        steps = _steps(entry)
        if len(steps) == 2 and steps[0] == "module":
            found |= resolver.under(f"{prefix}module.{steps[1]}")
        else:
            found |= resolver.resolve(module, [entry])
    return found


def _providers(reader: _Reader, section: Any) -> tuple[ProviderConfig, ...]:
    found = []
    for key, value in sorted(_object(section, "provider_config").items()):
        where = f"provider_config.{key}"
        raw = _object(value, where, _PROVIDER_KEYS)
        reader.count(where)
        arguments: dict[str, list[str]] = {}
        for path, reference in reader.expression_refs(
            raw.get("expressions") or {}, f"{where}.expressions"
        ):
            arguments.setdefault(path, []).append(reference)
        found.append(
            ProviderConfig(
                key=key,
                name=str(_text(raw.get("name"), f"{where}.name")),
                full_name=_text(raw.get("full_name"), f"{where}.full_name", optional=True),
                alias=_text(raw.get("alias"), f"{where}.alias", optional=True),
                module=_text(raw.get("module_address"), f"{where}.module_address", optional=True)
                or "",
                version_constraint=_text(
                    raw.get("version_constraint"), f"{where}.version_constraint", optional=True
                ),
                references={k: tuple(v) for k, v in sorted(arguments.items())},
            )
        )
    return tuple(found)


def configuration_of(plan: Any) -> Configuration | None:
    """The configuration of a plan's JSON, or None when it has no `configuration`."""
    if not isinstance(plan, dict) or plan.get("configuration") is None:
        return None
    return parse_configuration(plan["configuration"], plan.get("terraform_version"))


def required_configuration(plan: Any) -> Configuration:
    """The configuration of a plan's JSON; BadInput when it has none."""
    if not isinstance(plan, dict):
        raise BadInput("not a Terraform plan: expected a JSON object")
    found = configuration_of(plan)
    if found is None:
        raise BadInput("not a Terraform plan's JSON: no `configuration` section")
    return found
