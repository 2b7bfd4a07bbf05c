"""The restricted pickle writer's output loads in this environment's NumPy (see pickle_writer.py)."""

from pickle_writer import check_writer_output, write_cases


def test_pickle_writer_output_loads_in_numpy(tmp_path):
    write_cases(tmp_path)
    check_writer_output(tmp_path)
