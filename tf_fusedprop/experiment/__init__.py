"""The experiment harness behind `train.py`: data, metrics, callbacks and the training job.

The core of `tf_fusedprop` (ops, layers, losses, steps, `FusedPropGAN`) trains a GAN; this
subpackage runs experiments with it and is not needed to use the core.
"""
