"""config_fields: one entry per field, and the error every check raises (the checks' messages:
config_test, through `validate`)."""

import tensorflow as tf

from configs import base
from tests import testing_utils as tu
from tf_fusedprop.experiment import config_fields, datasets


class TablesTest(tu.TestCase):
    def test_every_field_has_one_entry(self):
        self.assertEqual(set(config_fields.FIELDS), set(base.get_base_config().keys()))
        dataset_fields = {key for name in datasets.names() for key in datasets.get(name).fields}
        self.assertEqual(set(config_fields.DATASET_FIELDS), dataset_fields)
        self.assertFalse(set(config_fields.FIELDS) & dataset_fields)

    def test_config_error_is_a_value_error(self):
        self.assertTrue(issubclass(config_fields.ConfigError, ValueError))


if __name__ == "__main__":
    tf.test.main()
