"""The compile server's protocol has one home (mlirgpu.execution.server_protocol), and its other speakers are held
to it: launcher.c's strings (the kinds and fields it writes and reads, the framing constants, the card's lines)
are read from the C source and compared with the module both ways, the module's writing functions write the
fields its table names, and docs/design.md's message table is exactly that table."""
import os
import re

from corpusutil import ROOT
from mlirgpu.execution import server_protocol as protocol
from mlirgpu.llvm import process

LAUNCHER_C = os.path.join(ROOT, "site_scons", "mlirgpu", "server", "launcher.c")
DESIGN = os.path.join(ROOT, "docs", "design.md")


def _c_code():
    """launcher.c without its comments (which quote Python names and JSON freely)."""
    with open(LAUNCHER_C, encoding="utf-8") as handle:
        text = handle.read()
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def _c_literals(code):
    """The string literals of `code`, their escaped quotes and line breaks read as C reads them."""
    return [literal.replace('\\"', '"').replace("\\n", "\n")
            for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', code)]


def _fields(message):
    return {field.rstrip("?") for field in message.fields if not field.startswith("(")}


def _spoken_by_launcher(role):
    """The messages protocol.MESSAGES says launcher.c sends (`role` "sender") or receives ("receiver")."""
    return [message for message in protocol.MESSAGES if "launcher.c" in getattr(message, role).split(", ")]


def test_the_json_launcher_c_writes_is_the_protocols():
    """The keys and kinds of every JSON text launcher.c writes (the run request, the attached header) are those
    of the messages the protocol says it sends, no more and no fewer."""
    literals = _c_literals(_c_code())
    written_keys = {key for literal in literals for key in re.findall(r'"(\w+)": ', literal)}
    written_kinds = {kind for literal in literals for kind in re.findall(r'"kind": "(\w+)"', literal)}
    sent = [message for message in _spoken_by_launcher("sender") if message.channel == "server socket"]
    assert written_keys == set().union(*map(_fields, sent))
    assert written_kinds == {message.name for message in sent if "kind" in message.fields}
    assert any(literal.startswith(protocol.ATTACHED.decode()) for literal in literals), \
        "launcher.c's attached header does not start as server_protocol.ATTACHED, which the server looks for"


def test_the_replies_launcher_c_reads_are_the_protocols():
    """The fields launcher.c looks for in the server's replies, and the kinds it compares, are those of the
    messages the protocol says it receives."""
    code = _c_code()
    read_keys = set(re.findall(r'reply_(?:string|number)\(\w+, "(\w+)"', code))
    read_kinds = set(re.findall(r'strcmp\(kind, "(\w+)"\)', code))
    received = _spoken_by_launcher("receiver")
    assert read_keys == set().union(*map(_fields, received))
    assert read_kinds == {message.name for message in received}


def test_launcher_c_frames_messages_as_the_protocol():
    """The sizes, the memfd, the streams message and the limits' names launcher.c uses are the protocol's."""
    code = _c_code()
    constants = {name: eval(value, {}) for name, value in  # noqa: S307 - integer expressions of our own C source
                 re.findall(r"\b(MAX_REQUEST|INLINE_REQUEST) = ([0-9 <]+)[,}]", code)}
    assert constants == {"MAX_REQUEST": protocol.MAX_REQUEST, "INLINE_REQUEST": protocol.INLINE_REQUEST}
    assert re.findall(r'memfd_create\("([^"]+)"', code) == [protocol.ATTACHED_FILE]
    streams = re.findall(r'send_with\(\w+, "(\w+)", (\d+), \w+, (\d+)\)', code)
    assert streams == [(protocol.STREAMS.decode(), str(len(protocol.STREAMS)), "3")]
    limits = re.findall(r'\{"(\w+)", RLIMIT_(\w+)\}', code)
    assert [name for name, _resource in limits] == list(protocol.LIMITS) == list(process.LIMITS)
    assert all(name == resource for name, resource in limits)


def test_launcher_c_reads_the_card_the_server_writes():
    """The card's first line and the tags of its lines (launcher.c's sscanf formats and tests) are those
    server_protocol.card_text writes."""
    code = _c_code()
    literals = _c_literals(code)
    assert f"{protocol.CARD}\n" in literals
    read_tags = set(re.findall(r'^([A-Z]) ', "\n".join(literal for literal in literals if re.match(r"[A-Z] ", literal)),
                               flags=re.M))
    read_tags |= set(re.findall(r"line\[0\] == '([A-Z])' && line\[1\] == ' '", code))
    card = protocol.card_text("0123abcd", {"/pkg": [("a.py", 1, 2)]}, ("/lib/libllvmlite.so", 3, 4))
    none = protocol.card_text("0123abcd", {}, None)
    assert read_tags == {line.split(" ")[0] for line in card.splitlines()[1:]}
    assert "L none\n" in literals and none.endswith("L none\n")


class _Recorder:
    """A socket that keeps the messages sent on it (their JSON, decoded) and the descriptors they carry."""

    def __init__(self):
        self.sent = []

    def sendmsg(self, buffers, ancillary):
        self.sent.append((protocol.decode(b"".join(buffers)), protocol.passed_fds(ancillary)))

    def send(self, data):
        self.sent.append((protocol.decode(data), []))


def _sent(write, *args):
    """What `write(socket, *args)` sends: [(message, descriptors)]."""
    recorder = _Recorder()
    write(recorder, *args)
    return recorder.sent


def test_each_message_is_written_with_the_fields_the_table_names():
    """The writing functions' messages have exactly the fields the table gives their message (optional ones may
    be left out), and each row of the table with a kind has its writer here."""
    written = {
        ("run", "client, launcher.c"): protocol.run_request("f", ["compile"], "/", {}, 0o22, {}),
        ("zygote", "build tool"): protocol.zygote_request("f"),
        ("tool", "command"): protocol.tool_request(["mlir-opt"], "/", {}),
        ("status", "server command, server"): protocol.plain_request("status"),
        ("stop", "server command"): protocol.plain_request("stop"),
        ("started", "server"): protocol.started(7),
        ("exit", "runner, server"): protocol.exit_answer(1, 9),
        ("zygote", "server"): protocol.zygote_answer(7, "log"),
        ("tool", "server"): _sent(protocol.send_tool_run, 7, [0, 1, 2, 0])[0][0],
        ("none", "server"): protocol.elsewhere("tool", True),
        ("status", "server"): protocol.status_answer(7, "f", 0.5, {}, "log", [], []),
        ("stopped", "server"): protocol.stopped(7),
        ("replaced", "server"): protocol.replaced(),
        ("elsewhere", "server"): protocol.elsewhere("run", False),
        ("error", "server"): protocol.error("not a request"),
    }
    table = {(message.name, message.sender): message for message in protocol.MESSAGES if "kind" in message.fields}
    assert sorted(written) == sorted(table)
    for key, value in written.items():
        required = {field for field in table[key].fields if not field.endswith("?")}
        assert required <= set(value) <= _fields(table[key]), key
        assert value["kind"] == key[0]
    assert set(protocol.exit_answer(0)) == {"kind", "code"} and set(protocol.no_tool()) == {"kind"}


def test_the_messages_without_a_kind_are_written_as_the_table_says():
    """A tool run's pipe ends, a runner's `retire` and a request over INLINE_REQUEST (its `attached` header and
    memfd) are sent as their rows say."""
    rows = {message.name: message for message in protocol.MESSAGES if "kind" not in message.fields}
    assert [len(fds) for _message, fds in _sent(protocol.send_tool_run, 7, [0, 1, 2, 0])] == [4]
    [(retire, _none)] = _sent(protocol.send_retire, True)
    assert set(retire) == _fields(rows["retire"])
    large = protocol.run_request("f", ["x" * protocol.INLINE_REQUEST], "/", {}, 0, {})
    [(attached, fds)] = _sent(protocol.request, large)  # the memfd is closed once sent
    assert set(attached) == _fields(rows["attached"]) and attached["attached"] > protocol.INLINE_REQUEST
    assert len(fds) == 1 and protocol.encode(attached).startswith(protocol.ATTACHED)


def _table_lines():
    """docs/design.md's message table as MESSAGES makes it."""
    return ["| " + " | ".join([f"`{m.name}`", m.sender, m.receiver, m.channel, ", ".join(m.fields), m.descriptors])
            + " |" for m in protocol.MESSAGES]


def test_the_design_page_lists_exactly_the_protocols_messages():
    with open(DESIGN, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("### The server's messages", 1)[1].split("\n### ", 1)[0]
    rows = [" ".join(line.split()) for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| message |")]
    expected = [" ".join(line.split()) for line in _table_lines()]
    assert rows == expected, "docs/design.md's message table, made from MESSAGES:\n" + "\n".join(_table_lines())
