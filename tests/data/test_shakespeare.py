"""Shakespeare as federated text: roles as clients, the shipped sample, LEAF's edition, fetch on local fixtures."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from hebench.data import fetch as fetch_mod
from hebench.data.cache import SHAKESPEARE_SAMPLE
from hebench.data.gutenberg import client_name, read_complete_works
from hebench.data.role_json import read_role_json, write_role_json
from hebench.data.roles import split_by_role
from hebench.data.shakespeare import load_shakespeare_roles, read_roles, sample_split
from hebench.data.speakers import read_speaker_blocks
from hebench.errors import DatasetError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shakespeare"
EDITION = FIXTURES / "complete-works-2011-excerpt.txt"
# tiny shakespeare in a shared/ folder beside the checkout (or above it), where there is one
TINY = next(
    (p / "shared/data/shakespeare/input.txt" for p in Path(__file__).resolve().parents if (p / "shared/data").is_dir()),
    Path("absent"),
)
SAMPLE_SHA256 = "d810918904654d02ef19408b768ab63335ccd6b33b177a61c7b4db8d154f1c00"
SAMPLE_ROLES = ["ANGELO", "AUTOLYCUS", "BAPTISTA", "BENVOLIO", "BRUTUS", "Clown", "DUCHESS OF YORK", "DUKE VINCENTIO"]

PLAY = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?
Let us kill him, and we'll have corn at our own price:
Is't a verdict?

Ghost of RIVERS:

Ghost of GREY:
Despair, and die!
"""


def _roles(n_roles: int, speeches: int) -> dict[str, list[str]]:
    return {f"ROLE{r}": [f"role {r} speech {i}" for i in range(speeches + r)] for r in range(n_roles)}


def test_speaker_blocks_take_only_a_blocks_first_line_as_its_speaker():
    speeches = read_speaker_blocks(PLAY)
    assert list(speeches) == ["First Citizen", "All", "Ghost of GREY"]  # a speaker line alone names no speech
    assert speeches["First Citizen"][1].endswith("Is't a verdict?")  # 'price:' inside a speech is verse
    assert len(speeches["First Citizen"]) == 2
    with pytest.raises(DatasetError, match="no speeches"):
        read_speaker_blocks("just prose, no speakers\n")


def test_split_by_role_holds_out_each_roles_last_speeches_and_keeps_clients_out_of_the_public_text():
    speeches = _roles(6, 10) | {"MINOR": ["a", "b"]}
    split = split_by_role(speeches, 3, min_speeches=10, seed=1)
    assert len(split.clients) == 3 and [c.role for c in split.clients] == sorted(c.role for c in split.clients)
    for client in split.clients:
        said = speeches[client.role]
        assert client.train + client.test == tuple(said) and len(client.test) == max(1, int(len(said) * 0.2))
    client_text = {s for c in split.clients for s in c.train + c.test}
    assert not client_text & set(split.public) and set(split.public) | client_text == {
        s for v in speeches.values() for s in v
    }
    assert split_by_role(speeches, 3, min_speeches=10, seed=1) == split  # seeded
    with pytest.raises(DatasetError, match="asked for 7"):
        split_by_role(speeches, 7, min_speeches=10)


def test_leaf_edition_roles_are_play_and_character():
    plays = read_complete_works(EDITION.read_text())
    assert {play for play, _ in plays} == {"ALLS WELL THAT ENDS WELL", "THE COMEDY OF ERRORS"}  # no sonnets
    helena = plays[("ALLS WELL THAT ENDS WELL", "HELENA")][0]
    assert helena.startswith("O, were that all!") and "Enter PAROLLES" not in helena  # centred direction left out
    assert helena.endswith("Cold wisdom waiting on superfluous folly.")  # the aside after it is still hers
    assert plays[("ALLS WELL THAT ENDS WELL", "BERTRAM")][0].endswith("evermore in subjection.")
    duke = plays[("THE COMEDY OF ERRORS", "DUKE")][0]  # that play is set two spaces left in the edition
    assert duke.startswith("Merchant of Syracuse") and "COPYRIGHT" not in duke
    assert not any(role == "NOTAROLE" for _, role in plays)  # after the end of the plays
    assert client_name("THE COMEDY OF ERRORS", "DUKE") == "THE_COMEDY_OF_ERRORS_DUKE"
    assert "ALLS_WELL_THAT_ENDS_WELL_HELENA" in read_roles(EDITION)


def test_a_newer_layout_is_refused_with_a_reason():
    with pytest.raises(DatasetError, match="2011 layout"):
        read_complete_works("TITLE\n\nby William Shakespeare\n\nROMEO.\nBut soft!\n")


def test_role_json_round_trip(tmp_path):
    split = split_by_role(_roles(3, 5), None, min_speeches=5)
    assert read_role_json(write_role_json(split.clients, tmp_path / "r.json")) == split.clients


def test_the_shipped_sample_is_the_stated_cut_of_tiny_shakespeare():
    assert fetch_mod.sha256_of(SHAKESPEARE_SAMPLE) == SAMPLE_SHA256
    source = (SHAKESPEARE_SAMPLE.parent / "SOURCE.md").read_text()
    assert SAMPLE_SHA256 in source and "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed" in source
    roles = read_role_json(SHAKESPEARE_SAMPLE)
    assert len(roles) == 20 and [r.role for r in roles][:8] == SAMPLE_ROLES
    assert all(
        len(r.train) + len(r.test) >= 60 and len(r.test) == int((len(r.train) + len(r.test)) * 0.2) for r in roles
    )


@pytest.mark.skipif(not TINY.is_file(), reason="tiny shakespeare is not in shared/ here")
def test_recutting_tiny_shakespeare_gives_the_shipped_sample(tmp_path):
    split = sample_split(TINY)
    assert fetch_mod.sha256_of(write_role_json(split.clients, tmp_path / "roles.json")) == SAMPLE_SHA256
    speeches = read_roles(TINY)
    others = [s for role, said in speeches.items() if role not in {r.role for r in split.clients} for s in said]
    assert list(split.public) == others  # the pretraining text: every speech of the other roles, none of theirs
    shared_phrases = {s for r in split.clients for s in r.train + r.test} & set(split.public)
    assert all(len(s) < 25 for s in shared_phrases)  # only stock phrases ('What then?') two roles both say


def test_sample_clients_are_a_seeded_draw():
    four = load_shakespeare_roles(sample=True, clients=4, seed=3)
    assert len(four) == 4 and four == load_shakespeare_roles(sample=True, clients=4, seed=3)
    assert {r.role for r in four} <= {r.role for r in read_role_json(SHAKESPEARE_SAMPLE)}
    with pytest.raises(DatasetError, match="asked for 21"):
        load_shakespeare_roles(sample=True, clients=21)


def test_a_path_to_play_text_is_split_by_role(tmp_path):
    text = "\n\n".join(f"ROLE {'ABC'[r]}:\nline {i} of role {r}" for i in range(12) for r in range(3))
    (tmp_path / "input.txt").write_text(text)
    roles = load_shakespeare_roles(sample=False, path=tmp_path, clients=2, min_speeches=10)
    assert len(roles) == 2 and all(len(r.train) == 10 and len(r.test) == 2 for r in roles)
    with pytest.raises(DatasetError, match="no Shakespeare text"):
        load_shakespeare_roles(sample=False, path=tmp_path / "empty")


@pytest.fixture
def served(tmp_path):
    """A loopback HTTP server for one file's bytes."""
    body = PLAY.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", body
    httpd.shutdown()


@pytest.mark.parametrize("algorithm", ["sha256", "md5"])
def test_fetch_downloads_and_checks_a_text_file(tmp_path, monkeypatch, served, algorithm):
    base, body = served
    digest = hashlib.new(algorithm, body).hexdigest()
    monkeypatch.setenv("HEBENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(
        fetch_mod, "card", lambda name: {"files": [{"url": "https://x.invalid/input.txt", algorithm: digest}]}
    )
    target = fetch_mod.fetch("tiny-shakespeare", base_url=base)
    assert (target / "input.txt").read_bytes() == body
    assert read_roles(target)["All"] == ["Speak, speak."]


def test_fetch_refuses_a_changed_local_copy(tmp_path, monkeypatch):
    original = tmp_path / "input.txt"
    original.write_text(PLAY)
    digest = fetch_mod.sha256_of(original)
    monkeypatch.setenv("HEBENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(
        fetch_mod, "card", lambda name: {"files": [{"url": "https://x.invalid/input.txt", "sha256": digest}]}
    )
    assert (fetch_mod.fetch("tiny-shakespeare", path=original) / "input.txt").read_text() == PLAY
    changed = tmp_path / "changed" / "input.txt"
    changed.parent.mkdir()
    changed.write_text(PLAY.replace("famish", "feast"))
    with pytest.raises(DatasetError, match="does not match the checksum") as info:
        fetch_mod.fetch("tiny-shakespeare", path=changed)
    assert "unchanged" in info.value.fix


def test_cards_pin_the_sources():
    tiny = fetch_mod.card("tiny-shakespeare")["files"][0]
    assert tiny["sha256"] == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    assert "370cbcd448eb7daf32f21a6be560b70e0b33c4e3" in tiny["url"]  # a commit, not a branch: the bytes cannot move
    leaf = fetch_mod.card("shakespeare")["files"][0]
    assert (
        leaf["url"].endswith("/100/pg100.txt") and fetch_mod.card_checksum(leaf) == "036d0f9cf7296f41165c2e6da1e52a0e"
    )


def test_datasets_list_shows_the_shakespeare_sample_and_how_to_fetch_the_rest():
    from hebench.data.presence import list_datasets

    rows = {s.name: s for s in list_datasets()}
    assert rows["shakespeare (sample)"].present
    assert "fetch tiny-shakespeare" in rows["tiny-shakespeare"].how and "fetch shakespeare" in rows["shakespeare"].how
