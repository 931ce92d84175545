// The limits of the /cluster routes, each with its default.

/** clusterStreamsMax bounds concurrent GET /cluster/events responses per API process (admins watching). */
export const clusterStreamsMax = 64;
