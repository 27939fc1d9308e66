"""Chat prompts and tool calls written as text: fast, no model loaded."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses.models._chat import (
    chat_messages,
    chat_segments,
    compile_template,
    parse_tool_calls,
    prompt_of,
    prompt_segments,
    render_chat,
)

TOOLS = {"get_order", "track_shipment"}


def calls_of(text, tools=TOOLS):
    content, calls = parse_tool_calls(text, tools)
    return content, [(call.name, json.loads(call.arguments)) for call in calls]


# -- reading tool calls ------------------------------------------------------------------------


def test_a_tool_call_block_is_a_call_with_its_arguments_as_json_text():
    content, calls = parse_tool_calls(
        '<tool_call>\n{"name": "track_shipment", "arguments": {"order_id": "ORD-1042"}}\n</tool_call>', TOOLS
    )

    assert content is None
    assert [(c.name, c.arguments) for c in calls] == [("track_shipment", '{"order_id": "ORD-1042"}')]


def test_several_blocks_are_several_calls_and_the_text_around_them_is_the_thought():
    text = (
        "Let me look both up.\n"
        '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "ORD-1"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "track_shipment", "arguments": {"order_id": "ORD-1"}}\n</tool_call>'
    )

    assert calls_of(text) == (
        "Let me look both up.",
        [("get_order", {"order_id": "ORD-1"}), ("track_shipment", {"order_id": "ORD-1"})],
    )


def test_a_block_cut_off_at_max_tokens_still_counts_when_its_json_is_whole_or_one_brace_short():
    assert calls_of('<tool_call>\n{"name": "get_order", "arguments": {"order_id": "ORD-7"}}')[1] == [
        ("get_order", {"order_id": "ORD-7"})
    ]
    assert calls_of('<tool_call>\n{"name": "get_order", "arguments": {"order_id": "ORD-7"}')[1] == [
        ("get_order", {"order_id": "ORD-7"})
    ]


def test_a_name_inside_a_block_is_kept_even_if_no_tool_has_it_so_the_runtime_can_say_so():
    assert calls_of('<tool_call>{"name": "refund_everything", "arguments": {}}</tool_call>')[1] == [
        ("refund_everything", {})
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_order", "arguments": {"order_id": "ORD-3"}}',
        '```json\n{"name": "get_order", "arguments": {"order_id": "ORD-3"}}\n```',
        '[{"name": "get_order", "arguments": {"order_id": "ORD-3"}}]',
        '{"type": "function", "function": {"name": "get_order", "arguments": "{\\"order_id\\": \\"ORD-3\\"}"}}',
        '{"name": "get_order", "parameters": {"order_id": "ORD-3"}}',
        "<tool_call>{'name': 'get_order', 'arguments': {'order_id': 'ORD-3'}}</tool_call>",
        '<tool_call>\n```json\n{"name": "get_order", "arguments": {"order_id": "ORD-3"}}\n```\n</tool_call>',
    ],
    ids=["bare", "fenced", "list", "openai-shape", "parameters", "single-quotes", "fenced-in-block"],
)
def test_the_usual_variations_of_one_call_are_read_alike(text):
    assert calls_of(text) == (None, [("get_order", {"order_id": "ORD-3"})])


def test_a_bare_call_one_brace_short_is_still_a_call():
    text = '{"name": "track_shipment", "arguments": {"order_id": "ORD-1042", "events": [{"at": "today"}]}'

    assert calls_of(text) == (
        None,
        [("track_shipment", {"order_id": "ORD-1042", "events": [{"at": "today"}]})],
    )


def test_bare_json_naming_no_offered_tool_stays_a_reply():
    text = '{"name": "Ada Lovelace", "arguments": {"age": 36}}'

    assert parse_tool_calls(text, TOOLS) == (text, [])


def test_a_bare_call_followed_by_a_result_the_model_invented_is_still_the_call():
    # Qwen 0.5B writes its call, then what it imagines the tool said; the tool's real answer comes next.
    text = '{"name": "get_order", "arguments": {"order_id": "ORD-3"}}\n{"error": "order not found"}'

    assert calls_of(text) == (None, [("get_order", {"order_id": "ORD-3"})])


@pytest.mark.parametrize(
    ("text", "thought"),
    [
        ('I will call {"name": "get_order", "arguments": {"order_id": "ORD-3"}} now.', "I will call  now."),
        (
            'Let me check.\n```json\n{"name": "get_order", "arguments": {"order_id": "ORD-3"}}\n```',
            "Let me check.",
        ),
        (
            '{"name": "get_order", "arguments": {"order_id": "ORD-3"}}\nI will tell you what I find.',
            "I will tell you what I find.",
        ),
        ('{{"name": "get_order", "arguments": {"order_id": "ORD-3"}}}}', None),  # doubled braces (Qwen 1.5B)
    ],
    ids=["inside-a-sentence", "fenced-after-prose", "then-prose", "doubled-braces"],
)
def test_a_call_written_inside_prose_is_a_call_and_the_prose_its_thought(text, thought):
    assert calls_of(text) == (thought, [("get_order", {"order_id": "ORD-3"})])


def test_a_call_of_a_tool_the_agent_is_not_offered_is_a_call_so_the_runtime_answers_unknown_tool():
    # The triage agent, not offered cancel_order, wrote it as fenced JSON: read as a reply, it never
    # learned the call was not available.
    text = '```json\n{"name": "cancel_order", "arguments": {"order_id": "ORD-3"}}\n```'

    assert calls_of(text) == (None, [("cancel_order", {"order_id": "ORD-3"})])


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "ORD-3 shipped yesterday"}',
        'Your order: {"id": "ORD-3", "status": "shipped"}.',
        'I would use {"name": "get_order"} here.',  # no arguments: not the shape of a call
    ],
    ids=["json-reply", "json-in-a-reply", "name-only"],
)
def test_json_that_is_not_shaped_like_a_call_stays_a_reply(text):
    assert parse_tool_calls(text, TOOLS) == (text, [])


@pytest.mark.parametrize(
    "text",
    [
        "Your order ORD-1042 shipped yesterday.",
        "<tool_call>\nget_order(ORD-1042)\n</tool_call>",
        '<tool_call>{"arguments": {"order_id": "ORD-1"}}</tool_call>',
        "<tool_call></tool_call>",
        '{"name": "get_order", "arguments": {"order_id": ',
        "",
    ],
    ids=["reply", "not-json", "no-name", "empty-block", "broken-bare", "empty"],
)
def test_text_that_holds_no_readable_call_comes_back_unchanged_as_content(text):
    assert parse_tool_calls(text, TOOLS) == (text, [])


def test_a_readable_name_with_unreadable_arguments_is_a_call_the_runtime_can_report():
    _, calls = parse_tool_calls('<tool_call>{"name": "get_order", "arguments": "ORD-1"}</tool_call>', TOOLS)

    assert [(c.name, c.arguments) for c in calls] == [("get_order", "ORD-1")]


@given(st.text())
def test_reading_any_text_never_raises(text):
    content, calls = parse_tool_calls(text, TOOLS)

    assert calls or content == text


@pytest.mark.parametrize("text", ["[" * 100_000, '<tool_call>{"name": ' + "[" * 100_000 + "</tool_call>"])
def test_deeply_nested_brackets_are_plain_text_not_a_recursion_error(text):
    content, calls = parse_tool_calls(text, TOOLS)

    assert (content, calls) == (text, [])


@given(st.text(alphabet="<>/{}[]\"':, tool_callnamearguments\n`json"))
def test_reading_text_made_of_the_format_s_own_characters_never_raises(text):
    parse_tool_calls(text, TOOLS)


# -- prompts ----------------------------------------------------------------------------------

# Qwen2.5's template in miniature: tools beside the system prompt, calls as <tool_call> blocks.
TEMPLATE = (
    "{% if tools %}<|system|>{{ messages[0].content }}\n# Tools\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}<|end|>\n"
    "{% else %}<|system|>{{ messages[0].content }}<|end|>\n{% endif %}"
    "{% for m in messages[1:] %}<|{{ m.role }}|>{{ m.content }}"
    '{% for call in m.tool_calls or [] %}<tool_call>{"name": "{{ call.function.name }}", '
    '"arguments": {{ call.function.arguments | tojson }}}</tool_call>{% endfor %}<|end|>\n{% endfor %}'
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SCHEMA = {"type": "function", "function": {"name": "get_order", "description": "Look an order up (<id>)."}}
CONVERSATION = [
    {"role": "system", "content": "You are the support desk."},
    {"role": "user", "content": "Where is ORD-1?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"a": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
]


def test_a_chat_prompt_is_cut_after_each_message_and_the_first_cut_holds_the_tools():
    template = compile_template(TEMPLATE)

    segments = chat_segments(template, CONVERSATION, [SCHEMA])

    assert "".join(segments) == render_chat(template, CONVERSATION, [SCHEMA])
    assert len(segments) == len(CONVERSATION) + 1
    assert segments[0].startswith("<|system|>You are the support desk.\n# Tools\n")
    assert segments[0].endswith("<|end|>\n")
    assert segments[1] == "<|user|>Where is ORD-1?<|end|>\n"
    assert segments[-1] == "<|assistant|>"  # the opening alone: the newest message is kept for the next call


def test_a_growing_conversation_keeps_its_earlier_segments():
    template = compile_template(TEMPLATE)

    shorter, longer = (chat_segments(template, CONVERSATION[:n], [SCHEMA]) for n in (3, 4))

    assert longer[:3] == shorter[:3]
    assert shorter[3] == longer[4] == "<|assistant|>"


def test_a_cut_the_template_does_not_allow_is_skipped():
    # This template writes every message after the last one's role: no earlier cut is a prefix.
    template = compile_template(
        "{% for m in messages %}{{ m.content }}|{{ messages[-1].role }}\n{% endfor %}"
    )

    assert chat_segments(template, CONVERSATION[:2], None) == [render_chat(template, CONVERSATION[:2], None)]


def test_tool_schemas_are_written_as_plain_json_and_call_arguments_as_objects():
    rendered = render_chat(compile_template(TEMPLATE), CONVERSATION, [SCHEMA])

    assert "Look an order up (<id>)." in rendered  # jinja2's own tojson would write \u003cid\u003e
    assert '"arguments": {"a": 1}}</tool_call>' in rendered


def test_messages_reach_the_template_with_text_content_and_parsed_arguments():
    shaped = chat_messages(
        [
            {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
            CONVERSATION[2],
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c2", "function": {"name": "x", "arguments": "{not json"}}],
            },
        ]
    )

    assert shaped[0]["content"] == "hi there"
    assert shaped[1]["content"] == ""
    assert shaped[1]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert shaped[2]["tool_calls"][0]["function"]["arguments"] == "{not json"
    assert CONVERSATION[2]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'  # not changed in place


def test_a_template_that_refuses_the_conversation_is_a_value_error():
    template = compile_template("{{ raise_exception('no tools here') }}")

    with pytest.raises(ValueError, match="no tools here"):
        render_chat(template, CONVERSATION, None)


def test_a_raw_prompt_is_cut_after_the_first_message_and_the_system_messages_after_it():
    examples = {"role": "system", "content": "Example 1"}
    assert prompt_segments("raw", CONVERSATION[:2], None, None) == [
        "You are the support desk.\n",
        "Where is ORD-1?",
    ]
    assert prompt_segments("raw", [CONVERSATION[0], examples, CONVERSATION[1]], None, None) == [
        "You are the support desk.\n",
        "Example 1\n",
        "Where is ORD-1?",
    ]
    assert "".join(
        prompt_segments("raw", [CONVERSATION[0], examples, CONVERSATION[1]], None, None)
    ) == prompt_of([CONVERSATION[0], examples, CONVERSATION[1]])
    assert prompt_segments("raw", CONVERSATION[1:2], None, None) == ["Where is ORD-1?"]
    assert prompt_segments("raw", [{"role": "user", "content": "Once"}], None, None) == ["Once"]
