// NOTE(skeleton): the production-backends helper starts s3rver and FerretDB here.
export default async function globalSetup(): Promise<void> {}
