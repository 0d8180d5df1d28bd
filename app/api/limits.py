"""How big a GraphQL document may be, and the extensions the schema runs.

The rule classes are built once here, so the validation cache (keyed by
them) is shared by every request; the extensions are passed as classes and
instantiated per request, as Strawberry wants.
"""

from collections.abc import Iterator

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

MAX_DEPTH = 20  # a resource's blast radius' resources' dependents: about 12
MAX_ALIASES = 100
MAX_TOKENS = 5_000  # GraphiQL's introspection query is about 300
MAX_FIELDS = 5_000  # fields once fragments are expanded (the rules below expand them)
CACHE_SIZE = 256  # distinct documents kept parsed and validated

_RULES = [
    *QueryDepthLimiter(max_depth=MAX_DEPTH).validation_rules,
    *MaxAliasesLimiter(max_alias_count=MAX_ALIASES).validation_rules,
]


class SizeLimits(AddValidationRules):
    def __init__(self) -> None:
        super().__init__(_RULES)


class TokenLimit(MaxTokensLimiter):
    def __init__(self) -> None:
        super().__init__(max_token_count=MAX_TOKENS)


class Parsed(ParserCache):
    def __init__(self) -> None:
        super().__init__(maxsize=CACHE_SIZE)


class Validated(ValidationCache):
    """Validation (cached), after a check that fragments do not expand the document
    exponentially: `fragment A { ...B ...B } fragment B { ...C ...C }` doubles per
    line, and the depth and alias rules expand fragments without memory of them."""

    def __init__(self) -> None:
        super().__init__(maxsize=CACHE_SIZE)

    def on_validate(self) -> Iterator[None]:
        document = self.execution_context.graphql_document
        fields = expanded_fields(document) if document is not None else 0
        if fields > MAX_FIELDS:
            # set before validation runs: Strawberry then skips it
            self.execution_context.pre_execution_errors = [
                GraphQLError(
                    f"the document expands to {fields} fields with its fragments; "
                    f"at most {MAX_FIELDS}"
                )
            ]
            yield
            return
        yield from super().on_validate()


def expanded_fields(document: DocumentNode) -> int:
    """How many fields the operations hold with every fragment spread expanded
    (linear time: each fragment's size is computed once)."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    sizes: dict[str, int] = {}

    def fragment(name: str) -> int:
        if name not in sizes:
            sizes[name] = 0  # a cycle (refused by validation) adds nothing here
            found = fragments.get(name)
            sizes[name] = count(found.selection_set) if found else 0
        return sizes[name]

    def count(selection_set: SelectionSetNode | None) -> int:
        total = 0
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                total += 1 + count(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                total += count(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += fragment(selection.name.value)
        return total

    return sum(
        count(d.selection_set)
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )


class PrivateSchema(SchemaExtension):
    """No introspection when the server's schema is not public (INFRAGRAPH_PUBLIC_SCHEMA=0).

    Decided per request from the context's settings: one schema serves both ways.
    """

    def on_operation(self) -> Iterator[None]:
        settings = getattr(self.execution_context.context, "settings", None)
        if settings is not None and not settings.public_schema:
            self.execution_context.validation_rules += (NoSchemaIntrospectionCustomRule,)
        yield


EXTENSIONS: list[type[SchemaExtension]] = [
    TokenLimit,
    SizeLimits,
    PrivateSchema,
    Parsed,
    Validated,
]
