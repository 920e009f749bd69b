"""The experiment harness behind `train.py`: data, metrics, callbacks and the training job.

The core of `tf_fusedprop` (ops, layers, losses, steps, `FusedPropGAN`) trains a GAN; this
subpackage runs experiments with it, and the core does not import it. Its modules, each
imported on its own (`from tf_fusedprop.experiment import train_lib`):

| module | what |
|---|---|
| `real_samples` | the real data: CIFAR-10 (TFDS: prepared, else downloaded), scikit-learn digits, MNIST-5k (and 1,000 of it), ring8/grid25 mixtures |
| `image_files` | a user's images (a folder, a zip, a TFDS dataset) decoded once into a cache (each file by `image_decoding`), what was skipped |
| `image_decoding` | one image's bytes to a square image: format sniffing, reduced JPEG decoding, EXIF orientation, transparency onto a background, crop and resize |
| `data_errors` | the errors of data that cannot be read (`DatasetUnavailableError`, `ImageSourceError`, `NotPreparedError`), imported by the modules that read it |
| `datasets` | one `DatasetSpec` per dataset name (shape, pipeline, evaluator, renderer, fields), and `open_dataset(config)`: one run's data, read once and shared (`OpenedDataset`) |
| `metrics` | FID, IS, KID, mode coverage: numpy and scipy only |
| `features` | feature extractors (digits classifier, TF-GAN Inception) and cached reference statistics |
| `downloads` | downloads that fail fast offline: reachability checks, SavedModels fetched once into a cache |
| `evaluators` | a generator's score on fixed latents: FID/IS (digits: and KID) of images, mode coverage of mixtures |
| `inference` | a run's samples and metrics from its checkpoint, without training (`train.py --mode=sample/evaluate`) |
| `training_plan` | `plan(config)`: the form fields read once into the schedule of forms, G's rate after a warm start and the fields as they act |
| `config` | `validate(config)`: one check per field, then the checks between fields and against the data; returns the opened dataset; `ConfigError` |
| `config_fields` | the config's fields (`FIELDS`, `DATASET_FIELDS`), one check per field's value, and `ConfigError`, what every check raises |
| `workdir` | the run directory: default location, existing-run check, `config.json`, one run at a time (`locked`) |
| `files` | the one atomic write (temporary name, then rename; a full disk in one line), JSON, stale temporaries |
| `pictures` | sample grids and scatter plots rendered with numpy, written as PNG |
| `summaries` | TensorBoard scalar/image/text records with core TensorFlow only |
| `callbacks` | Keras callbacks: sample grids, evaluation, throughput, progress, scalars, SIGKILL-safe checkpoints within and after epochs |
| `interrupt` | Ctrl-C and SIGTERM: the step reached saved, one line, the exit status |
| `distribution` | the `tf.distribute` strategy of `train.py --strategy`, its checks, sharding, who writes, stopping together |
| `divergence` | stops a run at its first non-finite update, keeping the last good checkpoint; the resume command |
| `train_lib` | `train(config, workdir)`: prepare, build, fit, finish |
"""
