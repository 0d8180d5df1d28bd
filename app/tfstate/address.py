"""Addresses as Terraform prints them."""

import functools
import json
import re
from typing import Any

# `["key"]` or `[0]` after a module name: dropped to get the module's config path.
_MODULE_INSTANCE_KEY = re.compile(r'\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\]')


def index_suffix(index_key: Any) -> str:
    if index_key is None:
        return ""
    if isinstance(index_key, str):
        return f"[{json.dumps(index_key, ensure_ascii=False)}]"
    return f"[{index_key}]"


@functools.lru_cache(maxsize=4096)  # a state has few modules, and edges ask per instance
def module_config_path(module: str | None) -> str:
    """`module.a["x"].module.b[0]` -> `module.a.module.b`."""
    return _MODULE_INSTANCE_KEY.sub("", module) if module else ""


def resource_key(module: str | None, mode: str, rtype: str, name: str) -> str:
    """The config address a `dependencies` entry uses: module keys dropped, no index."""
    local = f"{'data.' if mode == 'data' else ''}{rtype}.{name}"
    path = module_config_path(module)
    return f"{path}.{local}" if path else local


def instance_address(
    module: str | None, mode: str, rtype: str, name: str, index_key: Any, deposed: str | None
) -> str:
    """`module.a.aws_instance.web[0]`, `data.aws_ami.x`; a deposed object keeps its key."""
    local = f"{'data.' if mode == 'data' else ''}{rtype}.{name}{index_suffix(index_key)}"
    address = f"{module}.{local}" if module else local
    return f"{address} (deposed object {deposed})" if deposed is not None else address
