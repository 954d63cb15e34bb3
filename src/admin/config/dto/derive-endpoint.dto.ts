import { ApiPropertyOptional } from '@nestjs/swagger';
import { SettingValue } from './setting-validators';

/** POST /api/derive-endpoint body: an account id and/or an explicit endpoint (either spelling). */
export class DeriveEndpointDto {
  @ApiPropertyOptional({ type: String, nullable: true, example: '0123456789abcdef0123456789abcdef', description: 'Cloudflare account id.' })
  @SettingValue('objstore_account_id')
  account_id?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, description: 'Same as account_id (the config key spelling).' })
  @SettingValue('objstore_account_id')
  objstore_account_id?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://s3.eu-west-1.amazonaws.com', description: 'Explicit endpoint; wins over the account id.' })
  @SettingValue('objstore_endpoint')
  endpoint?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, description: 'Same as endpoint (the config key spelling).' })
  @SettingValue('objstore_endpoint')
  objstore_endpoint?: string | null;
}
