-- Stage checkpoints and their blobs (store/checkpoints.py).

-- name: get_checkpoint
SELECT * FROM checkpoints WHERE job_id = :job_id AND stage = :stage;

-- name: list_checkpoints
SELECT * FROM checkpoints WHERE job_id = :job_id ORDER BY position, created_at;

-- name: insert_checkpoint
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, version)
VALUES (:job_id, :stage, :position, :blob, :size, :attempt, :now, :version);

-- name: put_blob
INSERT INTO blobs (sha256, data, size, created_at) VALUES (:sha256, :data, :size, :now)
ON CONFLICT (sha256) DO NOTHING;

-- name: get_blob
SELECT data FROM blobs WHERE sha256 = :sha256;
