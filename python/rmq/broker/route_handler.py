"""What the supervisor's Route service does: routes, topic admin, the cluster view.

The handler speaks protobuf on one side and a :class:`Cluster` (the supervisor's
:class:`rmq.cluster.route_service.RouteService`, or a test double) on the other; it
knows nothing of processes or files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rmq.broker.validation import Limits, check_queue_count, check_topic
from rmq.client.messages import ShardProcessInfo
from rmq.proto.v1 import broker_pb2 as pb

# One shard process as the supervisor knows it: the class the client's ``cluster_info``
# answers with, so the two sides cannot drift.
ProcessInfo = ShardProcessInfo


class Cluster(Protocol):
    """The broker's topics and shard processes as the Route service sees them."""

    @property
    def data_dir(self) -> str: ...

    def create_topic(self, topic: str, queues: int) -> Sequence[int]:
        """Create or grow a topic; the shard directory of each queue."""
        ...

    def delete_topic(self, topic: str) -> None: ...

    def layout(self, topic: str) -> Sequence[int]:
        """The shard directory of each queue (``NotFoundError`` for an unknown topic)."""
        ...

    def topics(self) -> list[str]: ...

    def endpoint_of(self, shard: int) -> str:
        """host:port of the process serving shard directory ``shard``."""
        ...

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]: ...

    def processes(self) -> list[ProcessInfo]: ...


class RouteHandler:
    def __init__(self, cluster: Cluster, limits: Limits | None = None) -> None:
        self._cluster = cluster
        self._limits = limits or Limits()

    def _route(self, topic: str, layout: Sequence[int]) -> pb.TopicRoute:
        route = pb.TopicRoute(topic=topic)
        for queue_id, shard in enumerate(layout):
            route.queues.add(
                queue_id=queue_id, shard=shard, endpoint=self._cluster.endpoint_of(shard)
            )
        return route

    def get_route(self, request: pb.GetRouteRequest) -> pb.TopicRoute:
        check_topic(request.topic)
        return self._route(request.topic, self._cluster.layout(request.topic))

    def create_topic(self, request: pb.CreateTopicRequest) -> pb.TopicRoute:
        check_topic(request.topic)
        check_queue_count(request.queues, self._limits)
        return self._route(request.topic, self._cluster.create_topic(request.topic, request.queues))

    def delete_topic(self, request: pb.DeleteTopicRequest) -> pb.DeleteTopicResponse:
        check_topic(request.topic)
        self._cluster.delete_topic(request.topic)
        return pb.DeleteTopicResponse()

    def list_topics(self, request: pb.ListTopicsRequest) -> pb.ListTopicsResponse:
        return pb.ListTopicsResponse(topics=self._cluster.topics())

    def describe_topic(self, request: pb.DescribeTopicRequest) -> pb.DescribeTopicResponse:
        check_topic(request.topic)
        layout = self._cluster.layout(request.topic)
        response = pb.DescribeTopicResponse(topic=request.topic)
        for queue_id, shard in enumerate(layout):
            min_offset, max_offset = self._cluster.queue_offsets(request.topic, queue_id)
            response.queues.add(
                queue_id=queue_id,
                shard=shard,
                endpoint=self._cluster.endpoint_of(shard),
                min_offset=min_offset,
                max_offset=max_offset,
            )
        return response

    def cluster_info(self, request: pb.ClusterInfoRequest) -> pb.ClusterInfoResponse:
        response = pb.ClusterInfoResponse(data_dir=self._cluster.data_dir)
        for info in self._cluster.processes():
            response.processes.add(
                process=info.process,
                endpoint=info.endpoint,
                shards=info.shards,
                pid=info.pid,
                serving=info.serving,
                restarts=info.restarts,
            )
        return response
