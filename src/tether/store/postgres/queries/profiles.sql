-- Price profiles (store/profiles.py).

-- name: save_profile
INSERT INTO price_profiles (id, name, effective_date, body, created_at)
VALUES (%(id)s, %(name)s, %(effective_date)s, %(body)s, %(now)s)
ON CONFLICT (id) DO NOTHING;

-- name: get_profile
SELECT * FROM price_profiles WHERE id = %(id)s;
