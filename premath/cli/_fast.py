"""placeholder"""


def run_fast(argv):
    return None
