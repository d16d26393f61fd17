-- placeholder; replaced on merge
SELECT 1;
