"""The scripted engine admits requests first come, first served, as vLLM's and SGLang's schedulers do: a request
waiting for one of --max-num-seqs slots gets the next one freed, before any request that arrives after it. (A
request overtaken at every release would wait several requests' time, and a level's p99 TTFT would say so.)"""
import threading
import time

from scripted_engine.server import Slots


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_freed_slot_goes_to_the_request_that_waited_not_to_one_arriving_after_it():
    slots = Slots(1)
    slots.acquire()
    served = []
    waiting = threading.Thread(target=lambda: (slots.acquire(), served.append("waited"), slots.release()))
    waiting.start()
    wait_until(lambda: slots.waiting == 1)
    slots.release()
    # A request arriving now, once the slot is free again, is served after the one that waited.
    slots.acquire()
    served.append("arrived after")
    slots.release()
    waiting.join(5)
    assert served == ["waited", "arrived after"]


def admit(count, requests):
    """`requests` requests, each started once the ones before it wait for the `count` slots (all held at first);
    then the slots are freed. The order they were served in, and the most served at once."""
    slots, order, running, most = Slots(count), [], [0], [0]
    lock = threading.Lock()
    for _ in range(count):
        slots.acquire()

    def request(number):
        with slots:
            with lock:
                order.append(number)
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.002)
            with lock:
                running[0] -= 1

    threads = []
    for number in range(requests):
        threads.append(threading.Thread(target=request, args=(number,)))
        threads[-1].start()
        wait_until(lambda: slots.waiting == number + 1)
    for _ in range(count):
        slots.release()
    for thread in threads:
        thread.join(5)
    return order, most[0]


def test_requests_on_one_slot_are_served_in_the_order_they_came():
    order, most = admit(1, 8)
    assert order == list(range(8)) and most == 1, (order, most)


def test_never_more_requests_are_served_at_once_than_there_are_slots():
    order, most = admit(3, 12)
    assert sorted(order) == list(range(12)) and most <= 3, (order, most)
