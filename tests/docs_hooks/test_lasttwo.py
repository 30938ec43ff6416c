import threading

from docs_hooks.base.lasttwo import LastTwo


def test_a_value_stays_while_the_current_build_or_the_one_before_used_it():
    kept: LastTwo[str, int] = LastTwo()
    kept.keep("a", 1)
    kept.keep("b", 2)
    kept.new_build()
    assert kept.get("a") == 1  # used again by this build: stays for the next
    kept.new_build()
    assert kept.get("a") == 1
    assert kept.get("b") is None  # used by neither of the last two builds: gone
    assert kept.get("never") is None


def test_a_build_that_used_nothing_does_not_count():
    kept: LastTwo[str, int] = LastTwo()
    kept.keep("a", 1)
    kept.new_build()
    kept.new_build()  # the build before used nothing of it (a prose edit reads no recording)
    assert kept.get("a") == 1
    kept.keep("b", 2)
    kept.new_build()
    kept.get("b")
    kept.new_build()  # two builds that used the store went by without "a"
    assert kept.get("a") is None
    assert kept.get("b") == 2


def test_peek_does_not_count_as_a_use():
    kept: LastTwo[str, int] = LastTwo()
    kept.keep("a", 1)
    kept.new_build()
    assert kept.peek("a") == 1
    kept.keep("b", 2)  # this build used the store, not "a"
    kept.new_build()
    assert kept.peek("a") is None


def test_keep_replaces_the_value_and_counts_as_a_use():
    kept: LastTwo[str, int] = LastTwo()
    kept.keep("a", 1)
    kept.new_build()
    kept.keep("a", 2)
    kept.new_build()
    assert kept.get("a") == 2


def test_threads_of_one_build_share_it():
    kept: LastTwo[int, int] = LastTwo()
    wrong: list[int] = []  # a thread's failed assert would not fail the test: what went wrong is kept here

    def work(start: int) -> None:
        for i in range(start, start + 500):
            kept.keep(i, i)
            if kept.get(i) != i:
                wrong.append(i)

    threads = [threading.Thread(target=work, args=(n * 500,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    kept.new_build()
    assert all(kept.get(i) == i for i in range(2000))
