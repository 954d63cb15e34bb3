// Applies the @nestjs/swagger CLI plugin under ts-jest, so the OpenAPI document built in tests
// matches the one `nest build` produces (same options as nest-cli.json).
const transformer = require('@nestjs/swagger/plugin');

module.exports.name = 'nestjs-swagger-transformer';
module.exports.version = 1;
module.exports.factory = (cs) => transformer.before({ classValidatorShim: true, introspectComments: true, dtoFileNameSuffix: ['.dto.ts'] }, cs.program);
