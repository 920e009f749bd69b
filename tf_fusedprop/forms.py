"""The training forms as objects: what one `FusedPropGAN.train_step` does, phase by phase.

A form is a sequence of `Phase`s, each one optimizer update (of D, of G, or of both from one
computation), with a function that forms the gradients of the players it updates from one
(micro-)batch, through the pure steps of `tf_fusedprop.steps`:

| form | phases of one step |
|---|---|
| `Alternating(n_dis)` | `n_dis` x D (`discriminator_step`, fresh latents each), then G (`generator_step`, fresh latents) |
| `SinglePass("fused" / "inverse" / "adaptive", n_dis)` | `n_dis - 1` x D, then both players from one forward and one backward pass (`simgd_step`) |
| `Simultaneous(n_dis)` | `n_dis - 1` x D, then both players from one forward and two backward passes (two-pass SimGD, the reference) |

With `n_dis > 1` a simultaneous form's first `n_dis - 1` D updates are conventional D steps
(fresh latents each), and its last one updates both players from one pass: the paper's
limitation (no n_dis for FusedProp) removed, at the cost of one D step per extra D update.

`get("fused")` (or any name of `steps.FORMS`) gives the form of that name.
"""

import collections

import tensorflow as tf

from tf_fusedprop import steps
from tf_fusedprop._checks import positive_int

__all__ = ["FORMS", "Alternating", "Form", "Phase", "SinglePass", "Simultaneous", "get"]

FORMS = steps.FORMS

D, G = "discriminator", "generator"


class Phase(collections.namedtuple("Phase", ["name", "players", "logs", "gradients"])):
    """One optimizer update of a training step.

    Attributes:
      name: "discriminator", "generator" or "both".
      players: the players it updates ("discriminator", "generator").
      logs: the names of the scalar diagnostics it reports (`d_loss`, `g_loss`, `real_logit`,
        `fake_logit`).
      gradients: `(generator, discriminator, batch, loss, options) -> (grads, logs)`: `grads`
        maps each player it updates to gradients aligned with its trainable variables, `logs`
        maps `logs`' names to scalars.
    """


def _d_logs(d_loss, real_logits, fake_logits):
    return {"d_loss": d_loss, "real_logit": tf.reduce_mean(real_logits), "fake_logit": tf.reduce_mean(fake_logits)}


def _discriminator_gradients(generator, discriminator, batch, loss, options):
    r = steps.discriminator_step(generator, discriminator, batch, loss, options=options)
    return {D: r.d_grads}, _d_logs(r.d_loss, r.real_logits, r.fake_logits)


def _generator_gradients(generator, discriminator, batch, loss, options):
    r = steps.generator_step(generator, discriminator, batch, loss, options=options)
    return {G: r.g_grads}, {"g_loss": r.g_loss}


def _simultaneous_phase(form):
    def gradients(generator, discriminator, batch, loss, options):
        r = steps.simgd_step(generator, discriminator, batch, loss, form, options=options, check_independence=False)
        return {D: r.d_grads, G: r.g_grads}, {"g_loss": r.g_loss, **_d_logs(r.d_loss, r.real_logits, r.fake_logits)}

    return Phase("both", (D, G), ("d_loss", "g_loss", "real_logit", "fake_logit"), gradients)


DISCRIMINATOR = Phase("discriminator", (D,), ("d_loss", "real_logit", "fake_logit"), _discriminator_gradients)
GENERATOR = Phase("generator", (G,), ("g_loss",), _generator_gradients)


class Form:
    """A training form: a name, its phases, and the checks of what it can train.

    Args:
      n_dis: D updates per G update (per step).
    """

    name = None
    #: Whether one backward pass carries both players' losses, so that they share one loss scale.
    shares_loss_scale = True

    def __init__(self, n_dis=1):
        self.n_dis = positive_int("n_dis", n_dis)

    @property
    def phases(self):
        """The step's `Phase`s, in order."""
        raise NotImplementedError

    def check(self, loss, generator, discriminator, generator_inputs=None):
        """Validates the (loss, form) pair and the discriminator; returns the `GANLoss`.

        `generator_inputs` (a few of G's inputs) are for forms that probe D numerically.

        Raises:
          ValueError: a pair the loss does not support, or a D the form cannot train exactly.
        """
        loss = steps.check_form(loss, self.name)
        steps.check_discriminator(discriminator, self.name)
        return loss

    def get_config(self):
        """The form as plain values (`get` rebuilds it)."""
        return {"name": self.name, "n_dis": self.n_dis}

    def __repr__(self):
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items() if key != "name")
        return f"{type(self).__name__}({arguments})"


class Alternating(Form):
    """Conventional AltGD: `n_dis` D updates, each with fresh latents and the same real batch,
    then one G update with fresh latents (efficient: TF forms D's input gradients only)."""

    name = "alternating"
    shares_loss_scale = False

    @property
    def phases(self):
        """`n_dis` D phases, then a G phase."""
        return (DISCRIMINATOR,) * self.n_dis + (GENERATOR,)


class SinglePass(Form):
    """FusedProp's single-pass SimGD: one forward and one backward pass update both players.

    Args:
      rule: "fused" (FusedProp), "inverse" (InvFusedProp) or "adaptive" (per sample, the one
        whose factor cannot overflow); see `steps.SinglePassRule`.
      n_dis: D updates per step; the first `n_dis - 1` are D-only (conventional D steps with
        fresh latents), the last updates both players from one pass.
      check_independence: probe D once for cross-sample coupling, which would make the
        single-pass gradients wrong (`steps.check_sample_independence`); False skips it, for
        a D you know to be per-sample.
    """

    def __init__(self, rule="fused", n_dis=1, check_independence=True):
        if rule not in steps.SINGLE_PASS_FORMS:
            raise ValueError(
                f"Unknown single-pass rule. Received: rule={rule!r}. Valid rules: {', '.join(steps.SINGLE_PASS_FORMS)}."
            )
        self.name = rule
        super().__init__(n_dis)
        self.check_independence = bool(check_independence)

    @property
    def phases(self):
        """`n_dis - 1` D phases, then one phase updating both players."""
        return (DISCRIMINATOR,) * (self.n_dis - 1) + (_simultaneous_phase(self.name),)

    def check(self, loss, generator, discriminator, generator_inputs=None):
        """As `Form.check`, and the numerical independence probe of D on G's samples of
        `generator_inputs`."""
        loss = super().check(loss, generator, discriminator, generator_inputs)
        if self.check_independence and generator_inputs is not None:
            probe = steps.discriminator_probe(generator, generator_inputs)
            steps.check_sample_independence(discriminator, probe, self.name)
        return loss

    def get_config(self):
        """The form as plain values (`get` rebuilds it)."""
        return {**super().get_config(), "check_independence": self.check_independence}

    def __repr__(self):
        return f"SinglePass({self.name!r}, n_dis={self.n_dis}, check_independence={self.check_independence})"


class Simultaneous(Form):
    """Two-pass SimGD, the reference: one forward pass, one backward pass per player's loss.

    Args:
      n_dis: D updates per step; the first `n_dis - 1` are D-only.
    """

    name = "simultaneous"

    @property
    def phases(self):
        """`n_dis - 1` D phases, then one phase updating both players."""
        return (DISCRIMINATOR,) * (self.n_dis - 1) + (_simultaneous_phase(self.name),)


def get(form, **kwargs):
    """The `Form` that `form` names: a form itself, a name of `FORMS` (with the form's
    constructor `kwargs`, e.g. `n_dis=5`), or a `get_config()` dict.

    Raises:
      ValueError: an unknown name.
    """
    if isinstance(form, Form):
        if kwargs:
            raise ValueError(f"Pass the arguments to the form's constructor. Received: form={form!r}, {kwargs}")
        return form
    if isinstance(form, dict):
        kwargs = {**{key: value for key, value in form.items() if key != "name"}, **kwargs}
        form = form.get("name")
    if form == "alternating":
        return Alternating(**kwargs)
    if form == "simultaneous":
        return Simultaneous(**kwargs)
    if form in steps.SINGLE_PASS_FORMS:
        return SinglePass(form, **kwargs)
    raise ValueError(f"Unknown training form. Received: form={form!r}. Valid forms: {', '.join(FORMS)}.")
