// RAW_PATH is the raw grpc-js stream the snapshot bench compares FetchSnapshot with.
export const RAW_PATH = '/bench.Snapshot/Pull';
