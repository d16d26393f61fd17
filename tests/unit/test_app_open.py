import threading

from tether import Tether


def test_store_opens_once_however_many_threads_ask(tmp_path):
    app = Tether(f"sqlite:///{tmp_path}/t.db")
    seen, start = [], threading.Barrier(16)

    def grab():
        start.wait()
        seen.append(app.store)
    threads = [threading.Thread(target=grab) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in seen}) == 1
    app.close()
