"""`infragraph policy ...`: saved checks run on every write, through the API."""

import click

from app.cli.common import JSON_OUTPUT, ask, json_text

POLICY = "name severity resourceType states provider condition enforce"
CREATE_POLICY = f"""mutation($input: CreatePolicyInput!) {{
  createPolicy(input: $input) {{ {POLICY} }}
}}"""
DELETE_POLICY = f"mutation($name: String!) {{ deletePolicy(name: $name) {{ {POLICY} }} }}"
POLICIES = f"""query($first: Int!, $after: String) {{
  policies(first: $first, after: $after) {{
    edges {{ node {{ {POLICY} }} }} pageInfo {{ hasNextPage endCursor }}
  }}
}}"""
OPEN_VIOLATIONS = "query($policy: String!) { violations(policy: $policy) { totalCount } }"


def _open_violations(name: str) -> int:
    count: int = ask(OPEN_VIOLATIONS, {"policy": name}, "violations")["totalCount"]
    return count


@click.group(help="Saved checks run on every write of the states they cover.")
def policy() -> None:
    pass


@policy.command("create", help="Save a policy and evaluate it over every current version.")
@click.argument("name")
@click.option("--type", "resource_type", required=True, help="A glob over resource types.")
@click.option(
    "--condition", required=True, help='A SQL/JSON path predicate: $.acl == "public-read".'
)
@click.option("--severity", type=click.Choice(["info", "warning", "critical"]), default="warning")
@click.option("--states", help="A glob over state names (default: every state).")
@click.option("--provider", help="A glob over provider addresses (default: any).")
@click.option("--description", default="")
@click.option("--enforce", is_flag=True, help="Refuse IaC applies that would violate it.")
def policy_create(
    name: str,
    resource_type: str,
    condition: str,
    severity: str,
    states: str | None,
    provider: str | None,
    description: str,
    enforce: bool,
) -> None:
    given = {
        "name": name,
        "resourceType": resource_type,
        "condition": condition,
        "severity": severity.upper(),
        "states": states,
        "provider": provider,
        "description": description,
        "enforce": enforce,
    }
    ask(CREATE_POLICY, {"input": given}, "createPolicy")
    click.echo(f"created: {name} ({_open_violations(name)} open)")


@policy.command("list", help="The policies: name, severity, scope, condition, open violations.")
@JSON_OUTPUT
def policy_list(as_json: bool) -> None:
    found, after = [], None
    while True:
        page = ask(POLICIES, {"first": 1000, "after": after}, "policies")
        found += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    for each in found:
        each["openViolations"] = _open_violations(each["name"])
    if as_json:
        click.echo(json_text(found))
        return
    for each in found:
        scope = " ".join(
            f"{key}={each[key]}"
            for key in ("resourceType", "states", "provider")
            if each[key] is not None
        )
        enforce = " enforce" if each["enforce"] else ""
        click.echo(
            f"{each['name']}\t{each['severity'].lower()}{enforce}\t{scope}\t"
            f"{each['condition']}\t{each['openViolations']} open"
        )


@policy.command("delete", help="Delete a policy and its violations.")
@click.argument("name")
def policy_delete(name: str) -> None:
    ask(DELETE_POLICY, {"name": name}, "deletePolicy")
    click.echo(f"deleted: {name}")
