"""The karma plugin against a real host: what an author of a plugin writes with perch_sdk.testing.
Run with `PYTHONPATH=../../sdk/python python3 -m pytest` here (make test does)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def read(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def start(perch_host):
    return perch_host(bots={"karma.yaml": read("bots/karma.yaml")}, files={"karma.py": read("karma.py")})


def test_points_are_given_counted_and_listed(perch_host):
    perch = start(perch_host)
    first = perch.send("carol++", as_user="alice")
    assert perch.wait_for_reply(first).text == "carol has 1 ⭐"
    second = perch.send("carol++", as_user="bob")
    answer = perch.wait_for_reply(second)
    assert answer.text == "carol has 2 ⭐" and answer.quoted_message_id == second.id
    perch.wait_for_reply(perch.send("bob++", as_user="carol"))

    asked = perch.send("!karma carol", as_user="bob")
    assert perch.wait_for_reply(asked).text == "carol has 2 ⭐"
    # A plain `def` handler answers the same way.
    assert perch.wait_for_reply(perch.send("!top", as_user="bob")).text == "carol 2, bob 1"


def test_no_points_for_oneself_and_scores_survive_a_restart(perch_host):
    perch = start(perch_host)
    mine = perch.send("alice++", as_user="alice")
    perch.wait_for_reply(perch.send("!karma alice", as_user="alice"))
    assert not [m for m in perch.messages() if m.quoted_message_id == mine.id]
    perch.wait_for_reply(perch.send("bob++", as_user="alice"))
    assert "karma starts for karma, emoji ⭐" in perch.log()
    perch.restart()
    assert perch.wait_for_reply(perch.send("!karma bob", as_user="carol")).text == "bob has 1 ⭐"
