-- How far behind each node is, shown by GET /api/v1/nodes: the latest lateness of its
-- deliveries (ms past their instant, the worst of the last heartbeat interval), the runs in
-- its timer already past their instant, and the fires it expired by misfire policy in that interval.
ALTER TABLE nodes
    ADD COLUMN lateness_ms BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN backlog     BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN misfired    BIGINT NOT NULL DEFAULT 0;
