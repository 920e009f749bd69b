"""The experiment harness behind `train.py`: data, metrics, callbacks and the training job.

The core of `tf_fusedprop` (ops, layers, losses, steps, `FusedPropGAN`) trains a GAN; this
subpackage runs experiments with it, and the core does not import it. Its modules, each
imported on its own (`from tf_fusedprop.experiment import train_lib`):

| module | what |
|---|---|
| `data` | tf.data pipelines: CIFAR-10 (TFDS, offline), scikit-learn digits, ring8/grid25 mixtures |
| `metrics` | FID, IS, KID, mode coverage: numpy and scipy only |
| `features` | feature extractors (digits classifier, TF-GAN Inception) and cached reference statistics |
| `evaluators` | a generator's score on fixed latents: FID/IS of images, mode coverage of mixtures |
| `datasets` | one `DatasetSpec` per dataset name (shape, pipeline, evaluator, renderer, fields), and what the data fix in each network's builder arguments |
| `config` | `validate(config)`: one check per field, then the checks between fields; `ConfigError` |
| `workdir` | the run directory: default location, existing-run check, `config.json` |
| `files` | the one atomic write (temporary name, then rename) and JSON |
| `images` | sample grids and scatter plots rendered with numpy, written as PNG |
| `summaries` | TensorBoard scalar/image/text records with core TensorFlow only |
| `callbacks` | Keras callbacks: sample grids, evaluation, throughput, scalars, SIGKILL-safe checkpoints |
| `distribution` | the `tf.distribute` strategy of `train.py --strategy`, its checks, sharding, and who writes |
| `train_lib` | `train(config, workdir)`: prepare, build, fit, finish |
"""
