"""The OpenEnv wire format, as OpenEnv's own clients read it, and how a session answers it.

OpenEnv's tool environments take `CallToolAction` / `ListToolsAction` steps and answer with
`CallToolObservation` / `ListToolsObservation`; a step reply is
`{"observation": {...}, "reward": ..., "done": ...}`. A world judges nothing, so reward is
always None and done always False: graders read the diff from the state document instead.
The models here mirror OpenEnv's field for field so that its clients parse our replies.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from atoll.worlds import Instance, ToolResult, World

from ._sessions import Session

# OpenEnv's ToolErrorType values; the world's own error type stays in the result.
_ERROR_TYPES = {"unknown_tool": "tool_not_found", "invalid_arguments": "invalid_args"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallToolAction(_Strict):
    """Call one tool of the session's instance."""

    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ListToolsAction(_Strict):
    """List the world's tools with their JSON schemas (before any reset too, given a server default world)."""

    type: Literal["list_tools"] = "list_tools"
    metadata: dict[str, Any] = Field(default_factory=dict)


Action = Annotated[CallToolAction | ListToolsAction, Field(discriminator="type")]
ACTION = TypeAdapter(Action)


class ToolSpec(_Strict):
    name: str
    description: str
    input_schema: dict[str, Any]


class ToolErrorInfo(_Strict):
    """OpenEnv's `ToolError`: set whenever the call did nothing."""

    error_type: Literal["execution_error", "invalid_args", "transport_error", "tool_not_found", "timeout"]
    message: str


class CallResult(_Strict):
    """The call's result in the shape OpenEnv's MCP environments send (`data` is what the agent reads)."""

    content: list[dict[str, Any]]
    structured_content: dict[str, Any]
    data: Any
    is_error: bool


class ListToolsObservation(_Strict):
    tools: list[ToolSpec]
    metadata: dict[str, Any] = Field(default_factory=dict)


class CallToolObservation(_Strict):
    tool_name: str
    result: CallResult | None = None
    error: ToolErrorInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ResetObservation(_Strict):
    """What a reset tells the agent: the instance it now holds, the tool names and the world's documents."""

    episode_id: str
    world: str
    fixture: str
    seed: int
    clock: str
    now: str
    tool_names: list[str]
    documents: dict[str, str]
    metadata: dict[str, Any] = Field(default_factory=dict)


class WorldState(BaseModel):
    """The state document: `step_count` is the number of tool calls; `diff` is the net change so far."""

    episode_id: str | None
    session_id: str
    step_count: int
    world: str | None
    fixture: str | None = None
    seed: int | None = None
    clock: str | None = None
    now: str | None = None
    calls: list[dict[str, Any]] = Field(default_factory=list)
    diff: dict[str, Any] = Field(default_factory=dict)
    diff_summary: dict[str, dict[str, int]] = Field(default_factory=dict)
    row_counts: dict[str, int] = Field(default_factory=dict)


class ResetMessage(_Strict):
    type: Literal["reset"]
    data: dict[str, Any] = Field(default_factory=dict)


class StepMessage(_Strict):
    type: Literal["step"]
    data: dict[str, Any]


class StateMessage(_Strict):
    type: Literal["state"]


class CloseMessage(_Strict):
    type: Literal["close"]


class RowsRequest(_Strict):
    table: str
    limit: int = Field(50, ge=1, le=1000)


class RowsMessage(_Strict):
    """Not OpenEnv: the console's request for a table's first rows."""

    type: Literal["rows"]
    data: RowsRequest


Message = Annotated[
    ResetMessage | StepMessage | StateMessage | CloseMessage | RowsMessage, Field(discriminator="type")
]
MESSAGE = TypeAdapter(Message)
MESSAGE_TYPES = ("reset", "step", "state", "close", "rows")


def schemas() -> dict[str, Any]:
    """What `/schema` returns: the JSON schemas of actions, observations and the state."""
    return {
        "action": ACTION.json_schema(),
        "observation": TypeAdapter(CallToolObservation | ListToolsObservation).json_schema(),
        "reset_observation": ResetObservation.model_json_schema(),
        "state": WorldState.model_json_schema(),
    }


def step_reply(observation: BaseModel) -> dict[str, Any]:
    """An observation as OpenEnv's `serialize_observation` lays it out."""
    return {"observation": observation.model_dump(mode="json"), "reward": None, "done": False}


def tool_specs(world: World) -> list[ToolSpec]:
    return [
        ToolSpec(name=t.name, description=t.description, input_schema=t.parameters_schema())
        for t in world.tools.values()
    ]


def call_result(result: ToolResult) -> CallResult:
    payload = result.value if result.ok else {"error": result.error.model_dump()}
    return CallResult(
        content=[{"type": "text", "text": result.for_model()}],
        structured_content={"result": payload},
        data=payload,
        is_error=not result.ok,
    )


def call_observation(instance: Instance, action: CallToolAction) -> CallToolObservation:
    """Run one call; a failure sets `error` (OpenEnv's type) and keeps the world's structured error in `result`."""
    result = instance.call(action.tool_name, **action.arguments)
    error = None
    if not result.ok:
        error = ToolErrorInfo(
            error_type=_ERROR_TYPES.get(result.error.type, "execution_error"),
            message=f"{result.error.type}: {result.error.message}",
        )
    return CallToolObservation(tool_name=action.tool_name, result=call_result(result), error=error)


def list_tools_observation(world: World) -> ListToolsObservation:
    return ListToolsObservation(tools=tool_specs(world))


def reset_observation(session: Session) -> ResetObservation:
    instance, request = session.instance, session.request
    assert instance is not None and request is not None
    return ResetObservation(
        episode_id=request.episode_id or session.id,
        world=instance.world.name,
        fixture=instance.fixture.name,
        seed=instance.seed,
        clock=request.clock or "fixed",
        now=instance.now().isoformat(sep=" "),
        tool_names=list(instance.world.tools),
        documents=instance.world.documents,
    )
