"""Predicates, binding, projection through partition transforms, and the scalar reference evaluators.
No pyspark here: these are the rules the distributed planner is tested against."""
from sparkberg.expressions.predicates import (  # noqa: F401
    FALSE, TRUE, And, BoundPredicate, Expression, Not, Or, Predicate, and_, bind, evaluate, not_, or_, rewrite_not,
)
from sparkberg.expressions.projection import inclusive_projection, strict_projection  # noqa: F401
