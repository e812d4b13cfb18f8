"""Redaction on the way out: ``export --redact``, ``share``, and the pure redactor.

A capture recorded through the real proxy with one fake secret of every class comes out
with none of them, the same placeholder wherever one secret was, valid JSON-RPC on every
line, and still replays to the official SDK client. The pure redactor keeps every byte
that is not a secret, whatever the frame holds.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import DATA
from support.proc import PROXY, wait_recorded
from support.replay import DEMO_CLIENT, replay_agent_cmd, sdk_session

from acp_proxy.demo import proxy_argv
from acp_proxy.errors import UsageError
from acp_proxy.export.core.redact import Redactor, parse_rules, secret_name
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.store.reader import Store

SHARE = DATA / "share"
sys.path.insert(0, str(SHARE))
import secret_agent  # noqa: E402

LEAKY = [sys.executable, str(SHARE / "secret_agent.py")]
A2C, C2A = Direction.AGENT_TO_CLIENT, Direction.CLIENT_TO_AGENT


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def leaky_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo session against the leaky agent, recorded through the real proxy."""
    tmp = tmp_path_factory.mktemp("leaky")
    db = tmp / "rec.sqlite"
    r = subprocess.run(
        [*DEMO_CLIENT, "--workspace", str(tmp / "ws"), "--", *proxy_argv(db, *LEAKY)],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr.decode()
    wait_recorded(db)
    return db


def _raw_db(db: Path) -> bytes:
    store = Store(db)
    try:
        c = store.capture(None)
        return b"\n".join(f.raw for f in store.frames(c["id"]))
    finally:
        store.close()


def test_every_secret_class_is_recorded_then_none_is_exported(
    leaky_db: Path, tmp_path: Path
) -> None:
    recorded = _raw_db(leaky_db)
    for name, secret in secret_agent.SECRETS.items():  # the capture really holds them
        assert secret.encode() in recorded, name
    half = len(secret_agent.ANTHROPIC) // 2
    assert secret_agent.ANTHROPIC[:half].encode() + b'"' in recorded
    out = tmp_path / "shared.jsonl"
    r = cli("export", "--db", str(leaky_db), "--redact", "-o", str(out))
    assert r.returncode == 0, r.stderr.decode()
    data = out.read_bytes()
    for name, secret in secret_agent.SECRETS.items():
        assert secret.encode() not in data, name
    # neither half of the split key is left either
    assert secret_agent.ANTHROPIC[:half].encode() not in data
    assert secret_agent.ANTHROPIC[half:].encode() not in data
    for line in data.splitlines():  # valid JSON-RPC on every frame line
        obj = json.loads(line)
        if "record" in obj:  # the capture's metadata line: no frame
            continue
        message = json.loads(obj["text"])
        assert message["jsonrpc"] == "2.0"
        assert "method" in message or "id" in message
    err = r.stderr.decode()
    for rule in ("env", "github-token", "anthropic-key", "aws-access-key", "jwt", "private-key"):
        assert f"  {rule}: " in err, err
    assert "url-userinfo: 1 replacement(s)" in err and "secret-name" in err


def test_one_secret_is_one_placeholder_everywhere(leaky_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "shared.jsonl"
    assert cli("export", "--db", str(leaky_db), "--redact", "-o", str(out)).returncode == 0
    objs = [json.loads(line) for line in out.read_bytes().splitlines()]
    texts = [o["text"] for o in objs if "record" not in o]
    env = next(t for t in texts if '"terminal/create"' in t)
    name = json.loads(env)["params"]["env"][-1]
    # named by the first rule that met it (the tool call's "token" came first)
    assert name["name"] == "GITHUB_TOKEN" and name["value"].startswith("[redacted:")
    placeholder = name["value"]
    where = [t for t in texts if placeholder in t]
    assert len(where) == 3  # env, the message chunk, the tool call's rawInput
    tool = next(json.loads(t) for t in where if '"rawInput"' in t)
    assert tool["params"]["update"]["rawInput"]["token"] == placeholder
    chunks = [json.loads(t) for t in texts if '"agent_message_chunk"' in t]
    first = chunks[0]["params"]["update"]["content"]["text"]
    second = chunks[1]["params"]["update"]["content"]["text"]
    assert placeholder in first and "[redacted:anthropic-key:1]" in first
    assert second.startswith("; AWS [redacted:aws-access-key:1]")  # the rest of the key: gone


def test_redacted_frames_carry_the_sha256_of_their_original_bytes(
    leaky_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shared.jsonl"
    assert cli("export", "--db", str(leaky_db), "--redact", "-o", str(out)).returncode == 0
    store = Store(leaky_db)
    try:
        original = {f.seq: f.raw for f in store.frames(store.capture(None)["id"])}
    finally:
        store.close()
    changed = 0
    for line in out.read_bytes().splitlines():
        obj = json.loads(line)
        if "record" in obj:
            continue
        raw = obj["text"].encode()
        if "redacted" in obj:
            changed += 1
            assert obj["redacted"]["sha256"] == hashlib.sha256(original[obj["seq"]]).hexdigest()
            assert raw != original[obj["seq"]] and obj["size"] == len(raw)
        else:
            assert raw == original[obj["seq"]]  # untouched frames: byte-identical
    assert changed == 5  # initialize answer, tool call, two chunks, terminal/create


async def test_the_redacted_export_still_replays_to_the_sdk_client(
    leaky_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shared.jsonl"
    assert cli("export", "--db", str(leaky_db), "--redact", "-o", str(out)).returncode == 0
    client, results = await sdk_session(replay_agent_cmd(leaky_db, str(out)), tmp_path)
    assert results[1] == "end_turn" and results[-1] == "cancelled"
    texts = [json.dumps(u) for u in client.updates]
    assert any("[redacted:anthropic-key:1]" in t for t in texts)
    assert not any(secret_agent.GITHUB in t for t in texts)


def test_share_writes_html_without_the_secrets(leaky_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "bug.html"
    r = cli("share", "--db", str(leaky_db), "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr.decode()
    page = out.read_text()
    assert "Content-Security-Policy" in page and "[redacted:github-token" not in page
    for name, secret in secret_agent.SECRETS.items():
        assert secret not in page, name
    assert "redacted" in r.stderr.decode()


def test_optional_classes_and_a_rules_file(leaky_db: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[pattern]]\nname = "demo-word"\nregex = "debug mode"\n')
    out = tmp_path / "shared.jsonl"
    r = cli(
        "share", "--db", str(leaky_db), "--redact", "files,paths", "--redact-rules", str(rules),
        "-o", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    data = out.read_text()
    assert "debug mode" not in data and "[redacted:demo-word:1]" in data
    assert '\\"debug\\": false' not in data  # the file's content
    assert "[redacted:files:" in data
    assert "/tmp/" in data  # paths outside a home directory stay


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[[pattern]]\nname = 'x'\n", "regex must be"),
        ("[[pattern]]\nname = 'x'\nregex = '('\n", "bad regex"),
        ("[[pattern]]\nname = 'bad name'\nregex = 'a'\n", "name must be"),
        ("[[other]]\n", "unknown table"),
        ("not toml [", "not a rules file"),
        ("[[pattern]]\nname = 'x'\nregex = 'a*'\n", "empty string"),
    ],
)
def test_bad_rules_files_are_one_clear_error(text: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_rules(text, "rules.toml")
    rules = tmp_path / "rules.toml"
    rules.write_text(text)
    r = cli("export", "--db", str(tmp_path / "none.sqlite"), "--redact-rules", str(rules))
    err = r.stderr.decode()
    assert r.returncode == 2 and problem in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- the pure redactor -------------------------------------------------------------------

FAKES = {
    "openai-key": "sk-proj-" + "a1B2" * 8,
    "github-token": "github_pat_" + "11ABCDEFG" * 4,
    "slack-token": "xoxp-1234567890-abcdefghij",
    "aws-access-key": "ASIA" + "ABCDEFGHIJKLMNOP",
    "google-key": "AIza" + "S" * 35,
    "stripe-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
}


@pytest.mark.parametrize(("rule", "secret"), FAKES.items())
def test_each_shape_is_replaced_and_every_other_byte_kept(rule: str, secret: str) -> None:
    raw = (
        b'{"jsonrpc":"2.0" , "method":"x","params":{"a":"see '
        + secret.encode()
        + b' here","n":123456789012345678901234567890,"u":"\\u00e9"}}'
    )
    (out,) = Redactor().redact([Frame(0, A2C, 0, raw)])
    assert secret.encode() not in out.frame.raw
    assert out.frame.raw.replace(f"[redacted:{rule}:1]".encode(), secret.encode()) == raw
    assert out.sha256 == hashlib.sha256(raw).hexdigest() and out.rules == (rule,)


def test_urls_keep_everything_but_their_secrets() -> None:
    raw = b'{"u":"https://ann:pa55word@h.example/p?x=1&sig=abc123&token=zzz#f"}'
    (out,) = Redactor().redact([Frame(0, C2A, 0, raw)])
    assert out.frame.raw == (
        b'{"u":"https://ann:[redacted:url-userinfo:1]@h.example/p?x=1'
        b'&sig=[redacted:url-secret-param:1]&token=[redacted:url-secret-param:2]#f"}'
    )


def test_escaped_secrets_and_non_json_frames() -> None:
    aws = "AKIAABCDEFGHIJKLMNOP"
    escaped = b'{"k":"\\u0041KIAABCDEFGHIJKLMNOP and \\"q\\""}'
    noise = b"debug: AKIAABCDEFGHIJKLMNOP \xff\xfe not json"
    r = Redactor()
    a, b = r.redact([Frame(0, A2C, 0, escaped), Frame(1, A2C, 0, noise)])
    assert a.frame.raw == b'{"k":"[redacted:aws-access-key:1] and \\"q\\""}'
    assert b.frame.raw == b"debug: [redacted:aws-access-key:1] \xff\xfe not json"
    assert aws.encode() not in b.frame.raw
    assert any("not JSON" in n for n in r.notes)


def test_secret_names_and_header_pairs() -> None:
    raw = (
        b'{"params":{"mcpServers":[{"headers":[{"name":"Authorization","value":"Bearer x"}]}],'
        b'"_meta":{"apiKey":"abc","note":"fine"},"vars":[{"name":"DB_PASSWORD","value":"pw"},'
        b'{"name":"HOME","value":"/x"}]}}'
    )
    (out,) = Redactor().redact([Frame(0, C2A, 0, raw)])
    v = orjson.loads(out.frame.raw)["params"]
    assert v["mcpServers"][0]["headers"][0] == {
        "name": "Authorization",
        "value": "[redacted:header:1]",
    }
    assert v["_meta"] == {"apiKey": "[redacted:secret-name:1]", "note": "fine"}
    assert v["vars"] == [
        {"name": "DB_PASSWORD", "value": "[redacted:secret-name:2]"},
        {"name": "HOME", "value": "/x"},
    ]
    assert secret_name("x-api-key") and secret_name("sessionToken") and not secret_name("sessionId")


_keys = st.text(max_size=8).filter(lambda k: not secret_name(k) and k not in ("env", "headers"))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_keys, kids, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, ensure_ascii=st.booleans(), pad=st.sampled_from(["", " ", "\r\n\t "]))
def test_any_json_without_secrets_comes_out_identical(
    value: object, ensure_ascii: bool, pad: str
) -> None:
    """Any value (big integers, lone surrogates written raw: invalid UTF-8, odd spacing)
    where no secret is: the frame comes out byte for byte as it went in."""
    message = {"jsonrpc": "2.0", "method": "m", "params": {"v": value}}
    text = pad + json.dumps(message, ensure_ascii=ensure_ascii, separators=(pad + ",", ":" + pad))
    raw = text.encode("utf-8", "surrogatepass")
    (out,) = Redactor().redact([Frame(0, A2C, 0, raw)])
    assert out.frame.raw == raw and out.sha256 is None


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300), fake=st.sampled_from(list(FAKES.items())))
def test_any_bytes_around_a_secret(data: bytes, fake: tuple[str, str]) -> None:
    """Arbitrary bytes (invalid UTF-8, broken JSON) around a secret: the secret becomes
    its placeholder and every other byte stays where it was."""
    rule, secret = fake
    head, tail = data[: len(data) // 2], data[len(data) // 2 :]
    raw = head + b" " + secret.encode() + b" " + tail
    (out,) = Redactor().redact([Frame(0, A2C, 0, raw)])
    assert out.frame.raw == head + f" [redacted:{rule}:1] ".encode() + tail


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, fake=st.sampled_from(list(FAKES.items())), key=_keys)
def test_json_with_a_secret_stays_valid_json(
    value: object, fake: tuple[str, str], key: str
) -> None:
    rule, secret = fake
    message = {"params": {"v": value, key or "k": f"x {secret} y"}}
    raw = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    (out,) = Redactor().redact([Frame(0, A2C, 0, raw)])
    assert secret.encode() not in out.frame.raw
    assert out.frame.raw.replace(f"[redacted:{rule}:1]".encode(), secret.encode()) == raw
    # still JSON: the same value but for the placeholder
    expect = {"params": {"v": value, key or "k": f"x [redacted:{rule}:1] y"}}
    assert json.loads(out.frame.raw.decode("utf-8", "surrogatepass")) == json.loads(
        json.dumps(expect)
    )


def test_text_paths_and_key_rules() -> None:
    rules = parse_rules('[[key]]\nname = "acme"\nregex = "^x-acme-"\n', "r.toml")
    frames = [
        Frame(
            0,
            C2A,
            0,
            b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s",'
            b'"prompt":[{"type":"text","text":"fix /home/alice/app.py"}],'
            b'"_meta":{"x-acme-id":"v1"}}}',
        ),
        Frame(
            1,
            A2C,
            0,
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
            b'{"sessionUpdate":"tool_call","toolCallId":"t","title":"Edit",'
            b'"locations":[{"path":"/home/alice/app.py"}]}}}',
        ),
    ]
    a, b = Redactor(["text", "paths"], rules).redact(frames)
    assert orjson.loads(a.frame.raw)["params"]["prompt"][0]["text"] == "[redacted:text:1]"
    assert orjson.loads(a.frame.raw)["params"]["_meta"] == {"x-acme-id": "[redacted:acme:1]"}
    path = orjson.loads(b.frame.raw)["params"]["update"]["locations"][0]["path"]
    assert path == "/home/[redacted:home:1]/app.py"
    with pytest.raises(UsageError, match="no redaction class"):
        Redactor(["everything"])


def test_a_secret_found_in_a_url_is_replaced_where_it_stands_alone_too() -> None:
    frames = [
        Frame(0, C2A, 0, b'{"a":"say pa55-w0rd-xyz"}'),
        Frame(1, A2C, 0, b'{"u":"https://me:pa55-w0rd-xyz@example.com/"}'),
    ]
    a, b = Redactor().redact(frames)
    assert a.frame.raw == b'{"a":"say [redacted:url-userinfo:1]"}'
    assert b.frame.raw == b'{"u":"https://me:[redacted:url-userinfo:1]@example.com/"}'


def test_patch_and_asciicast_exports_are_redacted_too(tmp_path: Path) -> None:
    demo = str(Path(__file__).parents[2] / "recordings" / "demo-v1.jsonl")
    r = cli("export", demo, "--format", "patch", "--redact", "files")
    assert r.returncode == 0, r.stderr.decode()
    patch = r.stdout.decode()
    assert "-[redacted:files:1]\n" in patch and "+[redacted:files:2]\n" in patch
    assert '"debug"' not in patch and "files: 4 replacement(s)" in r.stderr.decode()
    plain = cli("export", demo, "--format", "patch").stdout.decode()
    assert '"debug": true' in plain  # without --redact: the file as written


def test_a_secret_used_as_a_member_name_is_replaced_too() -> None:
    token = FAKES["github-token"]
    raw = b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"' + token.encode() + b'":true}}}'
    (out,) = Redactor().redact([Frame(0, A2C, 0, raw)])
    assert orjson.loads(out.frame.raw)["params"]["_meta"] == {"[redacted:github-token:1]": True}


def test_a_key_of_one_provider_inside_another_prefix_is_still_found() -> None:
    short = "sk-ant-" + "q" * 17  # too short for the Anthropic shape, an OpenAI one still
    (out,) = Redactor().redact([Frame(0, A2C, 0, f'{{"t":"{short}"}}'.encode())])
    assert out.frame.raw == b'{"t":"[redacted:openai-key:1]"}'


def test_otlp_traces_are_made_from_the_redacted_frames(leaky_db: Path) -> None:
    plain = cli("export", "--db", str(leaky_db), "--format", "otlp", "--otel-content")
    assert plain.returncode == 0, plain.stderr.decode()
    assert secret_agent.GITHUB.encode() in plain.stdout  # the traces carry tool inputs
    r = cli("export", "--db", str(leaky_db), "--format", "otlp", "--otel-content", "--redact")
    assert r.returncode == 0, r.stderr.decode()
    json.loads(r.stdout)
    for name, secret in secret_agent.SECRETS.items():
        assert secret.encode() not in r.stdout, name
    assert b"[redacted:" in r.stdout and b"redacted 5 of" in r.stderr


def test_a_response_takes_its_method_by_the_one_pairing_rule() -> None:
    """What a response answers is found as everywhere else (acp_proxy/protocol/pairing.py):
    ids per direction, ``1`` is not ``"1"``, the newest of two requests with one id takes
    it, and a null-id error answers the other side's unreadable frame."""
    from acp_proxy.export.core.redact.messages import contexts
    from acp_proxy.export.core.redact.scan import scan

    raws = [
        (C2A, b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{}}'),
        (A2C, b'{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{}}'),
        (A2C, b'{"jsonrpc":"2.0","id":"1","result":{}}'),  # not 1: answers nothing
        (C2A, b'{"jsonrpc":"2.0","id":1,"result":{"content":"x"}}'),  # the agent's request
        (A2C, b'{"jsonrpc":"2.0","id":1,"result":{"token":"t"}}'),  # the client's
        (C2A, b'{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{}}'),
        (C2A, b'{"jsonrpc":"2.0","id":2,"method":7,"params":{}}'),  # the newest takes id 2
        (A2C, b'{"jsonrpc":"2.0","id":2,"result":{}}'),
        (C2A, b"not json"),
        (A2C, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}'),
    ]
    frames = [Frame(i, d, 0, raw) for i, (d, raw) in enumerate(raws)]
    found = contexts(frames, [scan(f.raw) for f in frames])
    methods = [next(iter(m.values())).method if m else None for m in found]
    assert methods == [
        "authenticate",
        "fs/read_text_file",
        None,
        "fs/read_text_file",
        "authenticate",
        "authenticate",
        None,
        None,
        None,
        None,
    ]
