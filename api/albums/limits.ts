// Every limit of album generation, with its default, in one place (the API's own are in ../limits.ts).

/** subjectLengthMax bounds an album's subject description (characters); beyond it: 422 SUBJECT_TOO_LONG. */
export const subjectLengthMax = 1000;
/** albumNameLengthMax bounds an album's optional display name. */
export const albumNameLengthMax = 128;
/** directionFieldLengthMax bounds each field of one shot direction; beyond it: 422 DIRECTION_TOO_LONG. */
export const directionFieldLengthMax = 200;
/**
 * imagePromptLengthMax bounds the prompt composed from the subject and one direction (what an image service
 * receives); beyond it: 422 PROMPT_TOO_LONG. It is below subject + six full fields, so long fields that pass
 * one by one can still be refused together, and well within what common image services accept (4000+).
 */
export const imagePromptLengthMax = 2000;
/** shotsPerAlbumMax bounds the directions (and so the shots) of one album; beyond it: 422 TOO_MANY_SHOTS. */
export const shotsPerAlbumMax = 24;
/** imageSidePxMin and imageSidePxMax bound an album's image width and height; outside: 422 IMAGE_SIZE_UNSUPPORTED. */
export const imageSidePxMin = 64;
export const imageSidePxMax = 1536;
/** imageSidePxDefault is the width and height of an album's images when the request names none. */
export const imageSidePxDefault = 512;
/**
 * anchorImageBytesMax bounds the anchor PNG: a generated anchor above it fails (IMAGE_TOO_LARGE) and a worker
 * refuses to fetch a larger one from AnchorURL.
 */
export const anchorImageBytesMax = 8 * 1024 * 1024;
/** shotImageBytesMax bounds one generated shot PNG; a larger one fails the shot (IMAGE_TOO_LARGE). */
export const shotImageBytesMax = 8 * 1024 * 1024;
/** seedMax bounds the anchor `seed` and the shot `variation` numbers a client may choose. */
export const seedMax = 1_000_000;

/**
 * blobChunkBytes is the raw size of one blob chunk document. Base64 makes it ~350 KB of JSON, well under the
 * replicated store's one-command limit (1 MiB), so every chunk is one replicated write.
 */
export const blobChunkBytes = 256 * 1024;
/** blobBytesMax bounds one stored blob (and so how many chunks a reader will fetch). */
export const blobBytesMax = 16 * 1024 * 1024;
/** blobSweepGraceMs keeps a blob younger than this from the sweep, so a worker's fresh image is never swept
 * in the moment between storing it and recording it on its album. */
export const blobSweepGraceMs = 60 * 60 * 1000;

/** blobSweepIntervalMs is how often one worker process sweeps unreferenced blobs. */
export const blobSweepIntervalMs = 60 * 60 * 1000;
/** blobSweepPageEntriesMax is how many albums or blobs one sweep reads per store list call. */
export const blobSweepPageEntriesMax = 200;

/** albumUpdateRetriesMax bounds compare-and-set attempts of one album update (workers race on one record). */
export const albumUpdateRetriesMax = 32;
/** albumUpdateBackoffMsMax is the largest random pause between two lost compare-and-set attempts. */
export const albumUpdateBackoffMsMax = 40;

/** albumWorkerConcurrencyDefault is how many album jobs one worker process runs at once. */
export const albumWorkerConcurrencyDefault = 4;
/** albumJobAttemptsDefault is how often a job runs before its anchor or shot is marked failed. */
export const albumJobAttemptsDefault = 3;
/** albumJobBackoffMsDefault is the first retry delay; it doubles on each further attempt (BullMQ exponential). */
export const albumJobBackoffMsDefault = 1000;
/**
 * albumJobLockDurationMsDefault is how long a running job's BullMQ lock lasts; its worker renews it every half
 * of that. A worker that dies (kill -9, a lost node) holds its jobs only until the lock runs out; the next
 * stalled check of any live worker then puts them back in the queue. So a dead worker's jobs run again within
 * albumJobLockDurationMsDefault + albumJobStalledIntervalMsDefault (20 s). Long enough that a busy event loop
 * (the built-in generator's pixel loops run on it, ~0.1 s per 512 px shot) never misses a renewal; BullMQ's
 * own default (30 s + 30 s) would leave an album standing for a minute.
 */
export const albumJobLockDurationMsDefault = 15_000;
/** albumJobStalledIntervalMsDefault is how often each worker looks for jobs whose lock ran out. */
export const albumJobStalledIntervalMsDefault = 5_000;
/**
 * albumJobStalledCountMax is how many times one job may come back from a dead worker before BullMQ fails it
 * (BullMQ's default, 1, would fail a job whose node died twice). A job BullMQ gives up on still ends its shot
 * or anchor: the worker marks it `failed` (album-worker.ts), so no shot is left `generating` for ever.
 */
export const albumJobStalledCountMax = 3;
/** albumJobsKept bounds the finished album jobs BullMQ keeps (for /work/stats and de-duplication). */
export const albumJobsKept = 5000;

/** userEventsMax caps one user's event stream (Redis XADD MAXLEN ~). */
export const userEventsMax = 10_000;
/** userEventsRetentionSeconds expires a user's event stream this long after its last event. */
export const userEventsRetentionSeconds = 7 * 24 * 60 * 60;
/** userEventStreamsMax bounds concurrent GET /events responses per API process. */
export const userEventStreamsMax = 1024;

/** channelSubscribeWaitMs bounds how long a new GET /events response waits for its channel subscription. */
export const channelSubscribeWaitMs = 2000;

/** imageServiceTimeoutMsDefault bounds one call to an HTTP image service. */
export const imageServiceTimeoutMsDefault = 120_000;
/** imageServiceResponseBytesMax bounds an HTTP image service's JSON answer (base64 images are large). */
export const imageServiceResponseBytesMax = 48 * 1024 * 1024;
