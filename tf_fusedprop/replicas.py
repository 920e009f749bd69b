"""What a training step asks `tf.distribute` about the replica it runs on, in one place.

Outside a strategy (or on one replica) every function here is the identity of one device:
`count()` is 1, `rows_of_global_batch` draws the batch itself, `all_agree` returns its flag,
`summed` its value.
"""

import tensorflow as tf

__all__ = ["all_agree", "count", "cross_replica", "fold_in_replica", "multi_worker", "rows_of_global_batch", "summed"]


def count():
    """The number of replicas training in sync (1 outside a strategy)."""
    return tf.distribute.get_strategy().num_replicas_in_sync


def _context():
    """The replica context of a step on several replicas, else None."""
    context = tf.distribute.get_replica_context()
    return context if context is not None and context.num_replicas_in_sync > 1 else None


def rows_of_global_batch(draw, n):
    """`draw(rows)` for the global batch of all replicas; this replica's `n` rows of it.

    So N replicas draw what one device would draw for the global batch (latents, labels).
    """
    context = _context()
    if context is None:
        return draw(n)
    start = tf.cast(context.replica_id_in_sync_group, tf.int32) * n
    return draw(n * context.num_replicas_in_sync)[start : start + n]


def fold_in_replica(seed):
    """A `[2]` seed made distinct per replica (unchanged on one replica)."""
    context = _context()
    if context is None:
        return seed
    return tf.random.experimental.stateless_fold_in(seed, context.replica_id_in_sync_group)


def all_agree(flag):
    """A boolean scalar AND-ed over the replicas (so that they all take the same branch)."""
    context = _context()
    if context is None:
        return flag
    failures = context.all_reduce("sum", tf.cast(tf.logical_not(flag), tf.float32))
    return tf.equal(failures, 0.0)


def summed(value):
    """`value` summed over the replicas (itself on one replica)."""
    context = _context()
    return value if context is None else context.all_reduce("sum", value)


def cross_replica(fn):
    """Runs `fn()` once for all replicas: directly, or through `merge_call` in a replica context
    (for updates of mirrored variables that every replica would otherwise apply again)."""
    context = _context()
    if context is None:
        return fn()
    return context.merge_call(lambda strategy: fn())


def multi_worker():
    """Whether the current strategy spans several worker processes (`MultiWorkerMirroredStrategy`
    with a cluster of more than one task)."""
    strategy = tf.distribute.get_strategy()
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    cluster = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(cluster.get(job, [])) for job in ("chief", "worker")) > 1
