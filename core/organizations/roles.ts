export type Role = 'owner' | 'admin' | 'member' | 'viewer';
export const ROLES: readonly Role[] = ['owner', 'admin', 'member', 'viewer'];

const RANK: Record<Role, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };

/** Owner > Admin > Member > Viewer. */
export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}
