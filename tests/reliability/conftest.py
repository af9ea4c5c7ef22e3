def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long end-to-end test (still part of the default run)")
