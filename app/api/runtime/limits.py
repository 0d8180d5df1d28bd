"""How big a GraphQL document and its answer may be, and the extensions the schema runs.

The rule classes are built once here, so the validation cache (keyed by
them) is shared by every request; the extensions are passed as classes and
instantiated per request, as Strawberry wants. Every limit error carries the
code LIMIT_EXCEEDED in its extensions, so errors are classified by what made
them, not by their wording.

The cost limit (CostLimit, with app.api.cost and app.api.budget) bounds an
answer's work and bytes before anything runs, meters its bytes while it runs,
and charges a token's budget.
"""

import math
from collections.abc import Iterator
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from graphql.language import Lexer, Source, TokenKind
from graphql.validation import ASTValidationRule, NoSchemaIntrospectionCustomRule, ValidationContext
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from app.access import ANONYMOUS
from app.api import cost
from app.api.budget import TokenBudgets
from app.config import Settings
from app.errors import LimitExceeded

MAX_DEPTH = 20  # a resource's blast radius' resources' dependents: about 12
MAX_ALIASES = 100
MAX_TOKENS = 5_000  # GraphiQL's introspection query is about 300
MAX_FIELDS = 5_000  # fields once fragments are expanded (the rules below expand them)
# The default of INFRAGRAPH_MAX_QUERY_NODES: about 2.5 s of work on this project's
# machine (an answer costs ~0.1 ms a node, the CPU of the one event loop): a default
# page (100) with two nested default pages, or `resources(first: 1000)` with two
# nested lists of 12.
MAX_NODES = Settings.max_query_nodes
CACHE_SIZE = 256  # distinct documents kept parsed and validated
LIMIT_EXCEEDED = "LIMIT_EXCEEDED"


def limit_error(message: str, detail: dict[str, int] | None = None) -> GraphQLError:
    extensions: dict[str, Any] = {"code": LIMIT_EXCEEDED}
    if detail:
        extensions["detail"] = detail
    return GraphQLError(message, extensions=extensions)


def _coded(rule: type[ASTValidationRule]) -> type[ASTValidationRule]:
    """`rule` whose errors (reported while it is built, as Strawberry's limiters do)
    carry the LIMIT_EXCEEDED code."""

    class Coded(rule):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            report = context.report_error

            def coded(error: GraphQLError) -> None:
                extensions = {"code": LIMIT_EXCEEDED}
                report(GraphQLError(error.message, error.nodes, extensions=extensions))

            context.report_error = coded  # type: ignore[method-assign]
            try:
                super().__init__(context)
            finally:
                del context.report_error

    return Coded


_RULES = [
    _coded(rule)
    for rule in (
        *QueryDepthLimiter(max_depth=MAX_DEPTH).validation_rules,
        *MaxAliasesLimiter(max_alias_count=MAX_ALIASES).validation_rules,
    )
]


def over_token_limit(error: GraphQLError) -> bool:
    """Whether a syntax error is the token limit's: the document has more tokens
    than the limit (counted here, up to one past it)."""
    if not isinstance(error, GraphQLSyntaxError) or error.source is None:
        return False
    lexer = Lexer(Source(error.source.body))
    try:
        for _ in range(MAX_TOKENS + 1):
            if lexer.advance().kind == TokenKind.EOF:
                return False
    except GraphQLSyntaxError:
        return False
    return True


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
        # errors set before the hook yields: Strawberry then skips its own validation
        context = self.execution_context
        document = context.graphql_document
        assert document is not None
        fields = expanded_fields(document)
        if fields > MAX_FIELDS:
            context.pre_execution_errors = [
                limit_error(
                    f"the document expands to {fields} fields with its fragments; "
                    f"at most {MAX_FIELDS}",
                    {"fields": fields, "max": MAX_FIELDS},
                )
            ]
            yield
            return
        schema = context.schema._schema
        context.pre_execution_errors = self.cached_validate_document(
            schema, document, context.validation_rules
        )
        yield


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


def estimated_nodes(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
) -> int:
    """The nodes an operation of a valid document would answer, every field at its default
    (app.api.cost)."""
    return cost.estimate(schema, document, operation_name, variables).nodes


def _budgets(context: Any, settings: Settings) -> TokenBudgets | None:
    """The server's token budgets (kept on its app state, made on first use)."""
    request = getattr(context, "request", None)
    if request is None:
        return None
    state = request.app.state
    found: TokenBudgets | None = getattr(state, "token_budgets", None)
    if found is None:
        found = TokenBudgets(settings.token_budget, settings.token_budget_seconds)
        state.token_budgets = found
    return found


def _over(estimate: cost.Estimate, settings: Settings) -> GraphQLError | None:
    if estimate.nodes > settings.max_query_nodes:
        return limit_error(
            f"the query would answer an estimated {estimate.nodes} nodes; at most "
            f"{settings.max_query_nodes} (ask for smaller pages: `first` multiplies along "
            "lists; walks, diffs and exports count as many nodes each)",
            {"nodes": estimate.nodes, "max": settings.max_query_nodes},
        )
    if estimate.bytes > settings.max_answer_bytes:
        return limit_error(
            f"the answer would hold an estimated {estimate.bytes} bytes; at most "
            f"{settings.max_answer_bytes} (select fewer JSON fields, or smaller pages)",
            {"bytes": estimate.bytes, "max": settings.max_answer_bytes},
        )
    return None


class CostLimit(SchemaExtension):
    """The cost limit (app.api.cost): an operation estimated over the request's limits or
    the token's budget (app.api.budget) is refused before it runs; one that runs is
    metered, and one the meter stopped answers a single LIMIT_EXCEEDED error with the
    figure. What it cost is then taken out of the token's budget."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        assert document is not None
        settings: Settings = getattr(context.context, "settings", None) or Settings()
        # a token's name; none on a server without tokens (everyone is one caller there)
        principal = getattr(context.context, "principal", None)
        who: str | None = None if principal in (None, ANONYMOUS) else principal.name
        budgets = _budgets(context.context, settings) if who is not None else None
        estimate = cost.estimate(
            context.schema._schema, document, context.operation_name, context.variables, cost.KEPT
        )
        refusal = _over(estimate, settings)
        if refusal is None and budgets is not None and who is not None:
            try:
                budgets.check(who, estimate.units)
            except LimitExceeded as exc:
                refusal = limit_error(exc.message, exc.detail)
        if refusal is not None:
            context.result = ExecutionResult(data=None, errors=[refusal])
            yield
            return
        with cost.metered(settings.max_answer_bytes) as meter:
            yield
        result = context.result
        if meter.over and isinstance(result, ExecutionResult):
            over = meter.refusal()
            result.data = None
            result.errors = [limit_error(over.message, over.detail)]
        if budgets is not None and who is not None:
            budgets.charge(who, estimate.nodes + math.ceil(meter.used / 1024))


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
    CostLimit,
]
