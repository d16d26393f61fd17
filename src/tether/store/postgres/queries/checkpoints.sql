-- Stage checkpoints and their blobs (store/checkpoints.py).

-- name: get_checkpoint
SELECT * FROM checkpoints WHERE job_id = %(job_id)s AND stage = %(stage)s;

-- name: list_checkpoints
SELECT * FROM checkpoints WHERE job_id = %(job_id)s ORDER BY position, created_at;

-- name: insert_checkpoint
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, version)
VALUES (%(job_id)s, %(stage)s, %(position)s, %(blob)s, %(size)s, %(attempt)s, %(now)s,
        %(version)s);

-- name: put_blob
INSERT INTO blobs (sha256, data, size, created_at)
VALUES (%(sha256)s, %(data)s, %(size)s, %(now)s)
ON CONFLICT (sha256) DO NOTHING;

-- name: get_blob
SELECT data FROM blobs WHERE sha256 = %(sha256)s;
